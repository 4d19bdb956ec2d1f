package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
)

// The ranking pushes through the real server: a guest's socket subscribes
// to a board fed by events, is answered with the current Top, and is
// pushed the new order within a refresh or so of the events that change
// it; an unknown board is NOT_FOUND.

func rankingPushServer(t *testing.T, extra ...string) string {
	t.Helper()
	return boardServer(t, `  - name: trending
    source: events
    windows: [hour, day]
    metrics: {plays: {weight: 1}}
    top: 10
    refresh: 1s
`, append([]string{"--admin-token", admissionAdmin}, extra...)...)
}

type rankingPush struct {
	Type    string `json:"type"`
	Ranking string `json:"ranking"`
	Window  string `json:"window"`
	Period  string `json:"period"`
	Items   []struct {
		Item  string   `json:"item"`
		Rank  int      `json:"rank"`
		Score *float64 `json:"score"`
	} `json:"items"`
}

func (p rankingPush) order() string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.Item)
	}
	return strings.Join(out, ",")
}

func exerciseRankingPushes(t *testing.T, base string) {
	post := func(prefix string, plays map[string]int) {
		t.Helper()
		at := time.Now().UTC().Format(time.RFC3339Nano)
		var events []string
		for item, n := range plays {
			for i := range n {
				events = append(events, fmt.Sprintf(`{"id":"%s-%s-%d","item":%q,"metric":"plays","value":1,"at":%q}`, prefix, item, i, item, at))
			}
		}
		code, out := call(t, http.MethodPost, base+"/v1/rankings/trending/events", admissionAdmin, `{"events":[`+strings.Join(events, ",")+`]}`)
		if code != http.StatusAccepted {
			t.Fatalf("events: %d %v", code, out)
		}
	}
	// pushedOrder waits for a ranking.update of the board's hour with the
	// given order, skipping those of an earlier step.
	pushedOrder := func(c *client, want string) rankingPush {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			left := time.Until(deadline)
			if left <= 0 {
				t.Fatalf("no ranking.update with the order %s", want)
			}
			p := decode[rankingPush](t, c.expect("ranking.update", left))
			if p.Ranking != "trending" || p.Window != "hour" {
				t.Fatalf("pushed %+v", p)
			}
			if p.order() == want {
				return p
			}
		}
	}

	c := dial(t, base, newGuest(t, base, 1500))
	c.expect("hello", 5*time.Second)
	c.send(map[string]any{"type": "subscribe", "id": "nope", "ranking": "nothing-here", "window": "hour"})
	if f := c.expectError(5 * time.Second); f.Re != "nope" || f.Error.Code != "NOT_FOUND" {
		t.Fatalf("an unknown board: %s", f.raw)
	}
	c.send(map[string]any{"type": "subscribe", "id": "s", "ranking": "trending", "window": "hour", "limit": 3})
	sub := decode[rankingPush](t, c.expect("subscribed", 5*time.Second))
	if sub.Ranking != "trending" || sub.Window != "hour" || sub.Period == "" {
		t.Fatalf("subscribed %+v", sub)
	}

	post("a", map[string]int{"duel": 3, "royale": 1})
	first := pushedOrder(c, "duel,royale")
	if s := first.Items[0].Score; s == nil || *s != 3 || first.Items[0].Rank != 1 {
		t.Fatalf("the first push %+v", first)
	}
	// More plays of royale pass duel: the new order is pushed.
	post("b", map[string]int{"royale": 4, "chess": 1})
	pushedOrder(c, "royale,duel,chess")
	// The limit asked for holds: four items, three pushed.
	post("c", map[string]int{"go": 10})
	if p := pushedOrder(c, "go,royale,duel"); len(p.Items) != 3 {
		t.Fatalf("limit 3: %+v", p)
	}

	c.send(map[string]any{"type": "unsubscribe", "id": "u", "ranking": "trending", "window": "hour"})
	c.expect("unsubscribed", 5*time.Second)
}

// expectError waits for the next error frame, keeping others for later
// expects.
func (c *client) expectError(within time.Duration) frame {
	c.t.Helper()
	timer := time.After(within)
	for {
		select {
		case f := <-c.frames:
			if f.Type == "error" {
				return f
			}
			c.skipped = append(c.skipped, f)
		case <-timer:
			c.t.Fatalf("%s: no error frame within %s", c.g.UserID, within)
		}
	}
}

func TestRankingPushesEmbedded(t *testing.T) {
	exerciseRankingPushes(t, rankingPushServer(t))
}

func TestRankingPushesRedisPostgres(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	exerciseRankingPushes(t, rankingPushServer(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix))
}
