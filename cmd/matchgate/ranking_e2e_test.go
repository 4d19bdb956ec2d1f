package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
)

// A board fed by another service through the real server: events posted
// with the service credential are counted once, the day's ranking and an
// item's rank are read with a player token, and new weights re-rank the
// day that has passed under them.
// boardServer starts a server whose queue file holds the queue duel and
// the ranking boards given (YAML list items under rankings:).
func boardServer(t *testing.T, boards string, args ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  - {name: duel, players: 2}\nrankings:\n"+boards), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg}, args...)...)
}

func rankingServer(t *testing.T, extra ...string) string {
	t.Helper()
	return boardServer(t, `  - name: products
    source: events
    metrics: {views: {weight: 1}, likes: {weight: 3}, sales: {weight: 5, transform: log1p}}
    top: 10
    refresh: 1s
`, append([]string{"--admin-token", admissionAdmin}, extra...)...)
}

func exerciseRankings(t *testing.T, base string) {
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var events []string
	add := func(id, item, metric string, value float64) {
		events = append(events, fmt.Sprintf(`{"id":%q,"item":%q,"metric":%q,"value":%v,"at":%q}`, id, item, metric, value, at))
	}
	for i := range 10 {
		add(fmt.Sprint("v-", i), "p-viewed", "views", 1) // 10 views: 10
	}
	for i := range 3 {
		add(fmt.Sprint("l-", i), "p-liked", "likes", 1) // 3 likes: 9
	}
	body := `{"events":[` + strings.Join(events, ",") + `]}`
	g := newGuest(t, base, 1500)
	if code, _ := call(t, http.MethodPost, base+"/v1/rankings/products/events", g.Token, body); code != http.StatusUnauthorized {
		t.Fatalf("a player posted events: %d", code)
	}
	code, out := call(t, http.MethodPost, base+"/v1/rankings/products/events", admissionAdmin, body)
	if code != http.StatusAccepted || out["accepted"] != 13.0 || out["duplicates"] != 0.0 {
		t.Fatalf("events: %d %v", code, out)
	}
	code, out = call(t, http.MethodPost, base+"/v1/rankings/products/events", admissionAdmin, body) // a retry
	if code != http.StatusAccepted || out["accepted"] != 0.0 || out["duplicates"] != 13.0 {
		t.Fatalf("the retry: %d %v", code, out)
	}
	order := func() string {
		t.Helper()
		code, out := call(t, http.MethodGet, base+"/v1/rankings/products?window=day", g.Token, "")
		if code != 200 {
			t.Fatalf("ranking: %d %v", code, out)
		}
		var items []string
		for _, it := range out["items"].([]any) {
			items = append(items, it.(map[string]any)["item"].(string))
		}
		return strings.Join(items, ",")
	}
	// The served Top N reflects accepted events within one refresh (1s);
	// a refresh that ran before the events served an empty day meanwhile.
	deadline := time.Now().Add(10 * time.Second)
	for order() != "p-viewed,p-liked" {
		if time.Now().After(deadline) {
			t.Fatalf("day ranking %s after 10 refreshes", order())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, out = call(t, http.MethodGet, base+"/v1/rankings/products/items/p-liked?window=day", g.Token, "")
	if item, _ := out["item"].(map[string]any); code != 200 || item["rank"] != 2.0 || item["score"] != 9.0 {
		t.Fatalf("item: %d %v", code, out)
	}
	// Likes weigh 4 from now on: the day is re-ranked under the new version.
	code, out = call(t, http.MethodPut, base+"/v1/admin/rankings/products/weights", admissionAdmin,
		`{"metrics":{"views":{"weight":1},"likes":{"weight":4},"sales":{"weight":5,"transform":"log1p"}},"by":"e2e"}`)
	if w, _ := out["weights"].(map[string]any); code != 200 || w["version"] != 1.0 || w["by"] != "e2e" {
		t.Fatalf("weights: %d %v", code, out)
	}
	if got := order(); got != "p-liked,p-viewed" {
		t.Fatalf("day ranking under the new weights %v", got)
	}
}

func TestRankingsEmbedded(t *testing.T) {
	exerciseRankings(t, rankingServer(t))
}

func TestRankingsRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseRankings(t, rankingServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}

// A board of source matchmaking through the real server: it counts the
// queue's joins, matches and user cancels from the record, with nothing
// posted to it.
func matchmakingBoardServer(t *testing.T, extra ...string) string {
	t.Helper()
	return boardServer(t, `  - name: busy
    source: matchmaking
    metrics: {joins: {weight: 1}, matches: {weight: 3}, cancels: {weight: -1}}
    windows: [hour, day]
    top: 10
    refresh: 1s
`, extra...)
}

func exerciseMatchmakingBoard(t *testing.T, base string) {
	hour := time.Now().UTC().Truncate(time.Hour)
	ticketIn := func(out map[string]any) map[string]any {
		t.Helper()
		tk, ok := out["ticket"].(map[string]any)
		if !ok {
			t.Fatalf("no ticket in %v", out)
		}
		return tk
	}
	join := func(g guest) string {
		t.Helper()
		code, out := call(t, http.MethodPost, base+"/v1/queues/duel/tickets", g.Token, `{}`)
		if code != http.StatusAccepted {
			t.Fatalf("join: %d %v", code, out)
		}
		return ticketIn(out)["id"].(string)
	}
	a, b, c := newGuest(t, base, 1500), newGuest(t, base, 1500), newGuest(t, base, 1500)
	ta := join(a)
	join(b)
	// a and b are matched before c joins, so c cannot take a seat.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := call(t, http.MethodGet, base+"/v1/tickets/"+ta, a.Token, "")
		if code == 200 && ticketIn(out)["status"] == "MATCHED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's ticket not matched within 10s: %d %v", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tc := join(c)
	if code, out := call(t, http.MethodDelete, base+"/v1/tickets/"+tc, c.Token, ""); code != http.StatusOK {
		t.Fatalf("cancel: %d %v", code, out)
	}
	// Within a few refreshes (1s each) the hour shows duel's counts.
	var last map[string]any
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, out := call(t, http.MethodGet, base+"/v1/rankings/busy?window=hour", a.Token, "")
		if code != 200 {
			t.Fatalf("ranking: %d %v", code, out)
		}
		last = out
		if items, _ := out["items"].([]any); len(items) == 1 {
			it := items[0].(map[string]any)
			m, _ := it["metrics"].(map[string]any)
			if it["item"] == "duel" && m["joins"] == 3.0 && m["matches"] == 1.0 && m["cancels"] == 1.0 {
				if it["score"] != 3.0+3-1 || it["rank"] != 1.0 {
					t.Fatalf("duel's score and rank: %v", it)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if time.Now().UTC().Truncate(time.Hour) != hour {
		t.Skip("the test crossed an hour boundary: its counts are split between two hours")
	}
	t.Fatalf("the hour's ranking after 10s: %v", last)
}

func TestRankingsMatchmakingEmbedded(t *testing.T) {
	exerciseMatchmakingBoard(t, matchmakingBoardServer(t))
}

func TestRankingsMatchmakingRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseMatchmakingBoard(t, matchmakingBoardServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}

// The built-in demo config serves its trending board on the embedded
// default.
func TestRankingsDemoTrending(t *testing.T) {
	base := startServer(t, "--guests", "true")
	g := newGuest(t, base, 1500)
	code, out := call(t, http.MethodGet, base+"/v1/rankings/trending?window=hour", g.Token, "")
	if code != 200 || out["board"] != "trending" || out["window"] != "hour" {
		t.Fatalf("trending: %d %v", code, out)
	}
}
