package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// A server started with --clock-skew stamps tickets on the Redis server's
// TIME, not on its shifted clock: the synchronization cancels the skew.
func TestEndToEndClockSkewIsCancelled(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { clockSkewE2E(t, "--clock-skew", "-1h") })
	t.Run("redis+postgres", func(t *testing.T) {
		redistest.Real(t)
		clockSkewE2E(t, "--clock-skew", "1h", "--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", redistest.Prefix(t))
	})
}

func clockSkewE2E(t *testing.T, args ...string) {
	base := startServer(t, args...)
	g := newGuest(t, base, 1500)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/queues/duel/tickets", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	var reply struct{ Ticket matcher.Ticket }
	err = json.Unmarshal(body, &reply)
	tk := reply.Ticket
	if err != nil || tk.ID == "" {
		t.Fatalf("join reply %s: %v", body, err)
	}
	// The test's clock and Redis's agree to well within a minute; the skew
	// is an hour.
	if d := time.Since(tk.EnqueuedAt).Abs(); d > time.Minute {
		t.Fatalf("ticket enqueued at %v, %v from now: the server's skewed clock stamped it", tk.EnqueuedAt, d)
	}
}
