package notify

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
)

// waiting reports the subscribers and the waiters of a user's channel.
func (h *Hub) waiting(userID string) (subs, waiters int) {
	ch := Channel(h.cfg.Prefix, userID)
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[ch]), len(h.waiters[ch])
}

// A subscribe that gives up (no confirmation, its context ended) leaves
// neither its subscriber nor its waiter behind.
func TestHubFailedSubscribeLeavesNoWaiter(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		// Run is not started: nothing reads the confirmation.
		h := NewHub(HubConfig{Redis: rdb, Prefix: prefix, ConfirmTimeout: 20 * time.Millisecond})
		defer h.conns.Close()
		for i := range 20 {
			ctx := context.Background()
			var cancel context.CancelFunc = func() {}
			if i%2 == 1 {
				ctx, cancel = context.WithTimeout(ctx, 5*time.Millisecond)
			}
			_, err := h.Subscribe(ctx, "alice", func([]byte) {})
			cancel()
			if err == nil {
				t.Fatal("subscribe without a confirmation succeeded")
			}
			if s, w := h.waiting("alice"); s != 0 || w != 0 {
				t.Fatalf("after failed subscribe %d: %d subscribers, %d waiters left", i, s, w)
			}
		}
	})
}

// A user's second socket, subscribing while the first socket's
// subscription is not confirmed yet, waits for the confirmation too.
func TestHubSecondSocketWaitsForTheConfirmation(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := NewHub(HubConfig{Redis: rdb, Prefix: prefix, ConfirmTimeout: time.Minute})
		first := make(chan error, 1)
		go func() {
			_, err := h.Subscribe(context.Background(), "alice", func([]byte) {})
			first <- err
		}()
		waitFor(t, func() bool { s, w := h.waiting("alice"); return s == 1 && w == 1 })

		// Unconfirmed (Run is not reading): the second socket may not go on.
		// It gives up at its deadline, which a slow machine may reach while
		// the SUBSCRIBE is still being written (an i/o timeout then, not
		// the context's error): either way the deadline must have passed.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := h.Subscribe(ctx, "alice", func([]byte) {})
		cancel()
		if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("second socket before the confirmation: %v, want it to wait (and give up at its deadline)", err)
		}

		second := make(chan error, 1)
		go func() {
			_, err := h.Subscribe(context.Background(), "alice", func([]byte) {})
			second <- err
		}()
		waitFor(t, func() bool { s, w := h.waiting("alice"); return s == 2 && w == 2 })
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = h.Run(runCtx); close(done) }()
		defer func() { stop(); <-done }()
		for _, c := range []chan error{first, second} {
			if err := <-c; err != nil {
				t.Fatal(err)
			}
		}
		if s, w := h.waiting("alice"); s != 2 || w != 0 {
			t.Fatalf("after the confirmation: %d subscribers, %d waiters", s, w)
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}
