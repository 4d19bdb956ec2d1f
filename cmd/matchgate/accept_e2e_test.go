package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// fleetManager is a fleet manager speaking docs/ALLOCATOR.md over HTTP.
type fleetManager struct {
	mu        sync.Mutex
	allocated []string // match ids
	released  []string
}

func (f *fleetManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		MatchID string `json:"matchId"`
		Region  string `json:"region"`
		Players []struct {
			UserID string `json:"userId"`
		} `json:"players"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/allocate":
		f.allocated = append(f.allocated, body.MatchID)
		_ = json.NewEncoder(w).Encode(map[string]string{"address": "10.7.0.1:7777", "session": "sess-" + body.MatchID})
	case "/release":
		f.released = append(f.released, body.MatchID)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *fleetManager) state() (allocated, released []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.allocated), slices.Clone(f.released)
}

type matchFrame struct {
	Re     string        `json:"re"`
	Match  matcher.Match `json:"match"`
	Reason string        `json:"reason"`
}

// The accept window end to end, through WebSockets, with the server handed
// out by a fleet manager over HTTP: both accept → match.ready with the
// server; one declines → match.dissolved, the other keeps their place, the
// decliner is cooled down and the server released.
func TestEndToEndAcceptWindow(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { acceptWindowE2E(t) })
	t.Run("redis+postgres", func(t *testing.T) {
		redistest.Real(t) // skips (or fails in CI) when Redis is absent
		acceptWindowE2E(t, "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", redistest.Prefix(t))
	})
}

func acceptWindowE2E(t *testing.T, args ...string) {
	fleet := &fleetManager{}
	fm := httptest.NewServer(fleet)
	t.Cleanup(fm.Close)
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte(`
queues:
  - name: arena
    players: 2
    acceptWindow: 10s
    declineCooldown: 30s
    window: [{after: 0s, width: 1000}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startServer(t, append([]string{"--config", cfg, "--allocator-url", fm.URL}, args...)...)

	pair := func() (a, b *client, m matcher.Match) {
		a, b = dial(t, base, newGuest(t, base, 1500)), dial(t, base, newGuest(t, base, 1500))
		for _, c := range []*client{a, b} {
			c.expect("hello", 5*time.Second)
			c.send(map[string]any{"type": "join", "id": "j", "queue": "arena"})
			c.expect("joined", 5*time.Second)
		}
		for i, c := range []*client{a, b} {
			f := decode[matchFrame](t, c.expect("match.found", 10*time.Second))
			if f.Match.State != matcher.MatchPendingAccept || f.Match.AcceptBy == nil || f.Match.Server != nil {
				t.Fatalf("match.found %d: %+v; want PENDING_ACCEPT with acceptBy and no server yet", i, f.Match)
			}
			m = f.Match
		}
		return a, b, m
	}

	// Both accept.
	a, b, m := pair()
	a.send(map[string]any{"type": "accept", "id": "acc-a", "matchId": m.ID})
	if r := decode[matchFrame](t, a.expect("match.update", 5*time.Second)); r.Re != "acc-a" || r.Match.State != matcher.MatchPendingAccept ||
		!slices.Equal(r.Match.Accepted, []string{a.g.UserID}) {
		t.Fatalf("reply to the first accept: %+v", r)
	}
	b.send(map[string]any{"type": "accept", "id": "acc-b", "matchId": m.ID})
	// The reply and the push race each other: take them in any order.
	got := b.expectEach(5*time.Second, "match.update", "match.ready")
	if r := decode[matchFrame](t, got["match.update"]); r.Match.State != matcher.MatchReady {
		t.Fatalf("reply to the last accept: %+v", r)
	}
	for _, f := range []frame{a.expect("match.ready", 5*time.Second), got["match.ready"]} {
		r := decode[matchFrame](t, f)
		if r.Match.ID != m.ID || r.Match.Server == nil || r.Match.Server.Address != "10.7.0.1:7777" || r.Match.Server.Session != "sess-"+m.ID {
			t.Fatalf("match.ready: %+v", r.Match)
		}
	}
	if allocated, _ := fleet.state(); !slices.Contains(allocated, m.ID) {
		t.Fatalf("fleet manager allocated %v, not %s", allocated, m.ID)
	}

	// One declines.
	c, d, m2 := pair()
	c.send(map[string]any{"type": "decline", "id": "dec", "matchId": m2.ID})
	cf := c.expectEach(5*time.Second, "match.update", "match.dissolved", "ticket.update")
	df := d.expectEach(5*time.Second, "match.dissolved", "ticket.update")
	if r := decode[matchFrame](t, cf["match.update"]); r.Match.State != matcher.MatchDissolved {
		t.Fatalf("reply to the decline: %+v", r)
	}
	for _, f := range []frame{cf["match.dissolved"], df["match.dissolved"]} {
		if r := decode[matchFrame](t, f); r.Match.ID != m2.ID || r.Reason != matcher.ReasonDeclined {
			t.Fatalf("match.dissolved: %+v", r)
		}
	}
	back := decode[struct{ Ticket matcher.Ticket }](t, df["ticket.update"]).Ticket
	if back.Status != matcher.StatusWaiting || back.MatchID != "" {
		t.Fatalf("the other player's ticket: %+v", back)
	}
	gone := decode[struct{ Ticket matcher.Ticket }](t, cf["ticket.update"]).Ticket
	if gone.Status != matcher.StatusCancelled || gone.CancelReason != matcher.ReasonDeclined {
		t.Fatalf("the decliner's ticket: %+v", gone)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, released := fleet.state(); slices.Contains(released, m2.ID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dissolved match's server was not released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The decliner is cooled down, over the socket and over REST.
	c.send(map[string]any{"type": "join", "id": "again", "queue": "arena"})
	if f := c.expect("error", 5*time.Second); f.Error == nil || f.Error.Code != string(protocol.CodeCooldown) {
		t.Fatalf("rejoin after a decline: %s", f.raw)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/queues/arena/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+c.g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "COOLDOWN") {
		t.Fatalf("REST rejoin: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// The one left waiting is told why over GET.
	v := getTicket(t, base, d.g, back.ID)
	if v.Ticket.Status != matcher.StatusWaiting || v.Explain == nil || v.Explain.Missing != matcher.MissingPlayers {
		t.Fatalf("GET of the waiting ticket: %+v explain %+v", v.Ticket, v.Explain)
	}
	// The queue reports its recent matches.
	resp, err = http.Get(base + "/v1/queues")
	if err != nil {
		t.Fatal(err)
	}
	var qs struct{ Queues []matcher.QueueInfo }
	_ = json.NewDecoder(resp.Body).Decode(&qs)
	resp.Body.Close()
	if len(qs.Queues) != 1 || qs.Queues[0].MatchesPerMinute <= 0 || qs.Queues[0].Wait == nil {
		t.Fatalf("queues: %+v", qs)
	}
}

// expectEach waits for one frame of each type, in any order, skipping
// others; an error frame fails the test.
func (c *client) expectEach(within time.Duration, types ...string) map[string]frame {
	c.t.Helper()
	got := map[string]frame{}
	rest := c.skipped[:0:0]
	for _, f := range c.skipped {
		if _, seen := got[f.Type]; !seen && slices.Contains(types, f.Type) {
			got[f.Type] = f
		} else {
			rest = append(rest, f)
		}
	}
	c.skipped = rest
	timer := time.After(within)
	for len(got) < len(types) {
		select {
		case f := <-c.frames:
			if f.Type == "error" {
				c.t.Fatalf("%s: error frame while waiting for %v: %s", c.g.UserID, types, f.raw)
			}
			if _, seen := got[f.Type]; !seen && slices.Contains(types, f.Type) {
				got[f.Type] = f
			}
		case <-timer:
			c.t.Fatalf("%s: only %d of %v within %s", c.g.UserID, len(got), types, within)
		}
	}
	return got
}
