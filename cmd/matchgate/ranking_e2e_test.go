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
func rankingServer(t *testing.T, extra ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`queues:
  - {name: duel, players: 2}
rankings:
  - name: products
    source: events
    metrics: {views: {weight: 1}, likes: {weight: 3}, sales: {weight: 5, transform: log1p}}
    top: 10
    refresh: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"--config", cfg, "--admin-token", admissionAdmin, "--guests", "true"}, extra...)...)
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
