package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// privateRedis runs a redis-server of the test's own on a free port, so the
// test can take it away and bring it back without disturbing anyone.
type privateRedis struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not installed")
		}
		t.Skip("redis-server not installed: skipping the outage test")
	}
	r := &privateRedis{t: t, addr: freePort(t)}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *privateRedis) start() {
	r.t.Helper()
	port := r.addr[strings.LastIndex(r.addr, ":")+1:]
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no")
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr})
	defer c.Close()
	for range 100 {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("private redis on %s did not start", r.addr)
}

func (r *privateRedis) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func readyStatus(base string) int {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectMatch waits for the player's match: pushed as match.found, or — if
// the push was published while the pub/sub connection was down — in the
// hello the gateway resends once it is back.
func (c *client) expectMatch(within time.Duration) matcher.Match {
	c.t.Helper()
	timer := time.After(within)
	for {
		var f frame
		if len(c.skipped) > 0 {
			f, c.skipped = c.skipped[0], c.skipped[1:]
		} else {
			select {
			case f = <-c.frames:
			case <-timer:
				c.t.Fatalf("%s: no match within %s", c.g.UserID, within)
			}
		}
		{
			switch f.Type {
			case "match.found":
				return decode[struct{ Match matcher.Match }](c.t, f).Match
			case "hello":
				if h := decode[helloFrame](c.t, f); len(h.Matches) > 0 {
					return h.Matches[len(h.Matches)-1]
				}
			}
		}
	}
}

// While Redis is gone, sockets stay up, /readyz fails and joins answer
// UNAVAILABLE at once; when it comes back (empty: a restart without
// persistence), everything resumes by itself — the waiting ticket is rebuilt
// from the record and matched, and both players are pushed.
func TestRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("takes ~15s")
	}
	rd := startPrivateRedis(t)
	base := startServer(t, "--redis-url", "redis://"+rd.addr+"/0", "--lease-ttl", "2s")
	a := dial(t, base, newGuest(t, base, 1500))
	a.expect("hello", 5*time.Second)
	a.send(map[string]any{"type": "join", "id": "1", "queue": "duel"})
	aTicket := decode[struct{ Ticket matcher.Ticket }](t, a.expect("joined", 5*time.Second)).Ticket
	bGuest := newGuest(t, base, 1500)
	b := dial(t, base, bGuest)
	b.expect("hello", 5*time.Second)

	rd.stop()
	waitFor(t, "/readyz fails", 5*time.Second, func() bool { return readyStatus(base) == http.StatusServiceUnavailable })
	start := time.Now()
	b.send(map[string]any{"type": "join", "id": "2", "queue": "duel"})
	f := b.expect("error", 5*time.Second)
	if f.Error == nil || f.Error.Code != string(protocol.CodeUnavailable) {
		t.Fatalf("join during the outage: %s, want UNAVAILABLE", f.raw)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("join during the outage took %s to be refused", d)
	}
	req, _ := http.NewRequest("POST", base+"/v1/queues/duel/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+bGuest.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("REST join during the outage: %d Retry-After=%q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The sockets are still up.
	a.send(map[string]any{"type": "ping", "id": "p"})
	a.expect("pong", 5*time.Second)

	rd.start()
	back := time.Now()
	waitFor(t, "/readyz recovers", 10*time.Second, func() bool { return readyStatus(base) == http.StatusOK })
	// Joins are refused until the health check has seen Redis back; retry
	// like a client would (over REST, so that the socket's frames are left
	// for the checks below).
	waitFor(t, "join accepted", 10*time.Second, func() bool {
		req, _ := http.NewRequest("POST", base+"/v1/queues/duel/tickets", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+bGuest.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	})
	// a's ticket is rebuilt from the record (reconciler on lease takeover)
	// and matched with b's; both are pushed through the restored pub/sub.
	ma := a.expectMatch(20 * time.Second)
	mb := b.expectMatch(5 * time.Second)
	if ma.ID != mb.ID || !slices.Contains(ma.TicketIDs(), aTicket.ID) {
		t.Fatalf("a got %s, b got %s; a's ticket %s", ma.ID, mb.ID, aTicket.ID)
	}
	t.Logf("recovered: match %s formed %s after Redis came back", ma.ID, fmt.Sprint(time.Since(back).Round(time.Millisecond)))
}
