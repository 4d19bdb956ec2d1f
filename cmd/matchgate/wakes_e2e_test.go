package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/pool"
)

// TestJoinWakesMatcherInAnotherProcess: with the gateway and the matcher in
// separate processes, a join wakes the matcher through Redis: the pair is
// matched at once, not at the queue's 30 s tick.
func TestJoinWakesMatcherInAnotherProcess(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	cfg := filepath.Join(t.TempDir(), "queues.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  - name: slow\n    players: 2\n    tick: 30s\n    window:\n      - {after: 0s, width: 100000}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--redis-url", redistest.URL(), "--postgres-url", pgURL(t), "--redis-prefix", prefix, "--config", cfg}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--roles", "matcher"}, common...)
		done <- run(ctx, args, func(string) string { return "" }, io.Discard, io.Discard, nil)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("matcher stopped with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("matcher did not stop within 20s")
		}
	})
	// The matcher holds the partition before anyone joins: its first pass
	// (on taking the lease) finds nothing.
	lease := pool.New(rdb, prefix).LeaseKey(matcher.Partition{Queue: "slow", Region: "global"}.String())
	eventuallyOK(t, "the matcher took the lease", func() bool { return rdb.Exists(ctx, lease).Val() == 1 })

	base, _ := startServerWithLog(t, append(common, "--roles", "gateway,relay")...)
	h := &hostile{t: t, base: base, accepted: map[string]int{}, attacker: map[string]bool{}, from: map[string]string{}}
	var pair []*client
	for i := range 2 {
		c := h.dialFrom(h.guestFrom("", false), "")
		c.expect("hello", 5*time.Second)
		c.send(map[string]any{"type": "join", "id": "j" + string(rune('a'+i)), "queue": "slow"})
		c.expect("joined", 5*time.Second)
		pair = append(pair, c)
	}
	for _, c := range pair {
		if m := decode[struct{ Match matcher.Match }](t, c.expect("match.found", 5*time.Second)).Match; m.Queue != "slow" || len(m.Players) != 2 {
			t.Fatalf("match: %+v", m)
		}
	}
}
