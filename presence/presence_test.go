package presence_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/presence"
)

func TestPresence(t *testing.T) {
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		now := time.UnixMilli(1_800_000_000_000)
		clock := func() time.Time { return now }
		a := presence.New(presence.Config{Redis: rdb, Prefix: prefix, Node: "a", Now: clock})
		b := presence.New(presence.Config{Redis: rdb, Prefix: prefix, Node: "b", Now: clock})
		if err := a.Connected(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		a.Connected(ctx, "u1") // a second socket
		b.Connected(ctx, "u2")
		seen, err := a.LastSeen(ctx, []string{"u1", "u2", "nobody"})
		if err != nil || !seen["u1"].Equal(now) || !seen["u2"].Equal(now) {
			t.Fatalf("last seen: %v %v", seen, err)
		}
		if _, ok := seen["nobody"]; ok {
			t.Fatal("a user never connected has a last-seen time")
		}
		if node, ok, _ := a.Where(ctx, "u2"); !ok || node != "b" {
			t.Fatalf("u2 is on %q %v, want b", node, ok)
		}
		a.Disconnected("u1") // one socket left
		if node, ok, _ := a.Where(ctx, "u1"); !ok || node != "a" {
			t.Fatal("closing one of two sockets took the user offline")
		}
		left := now
		a.Disconnected("u1")
		now = now.Add(time.Minute)
		seen, _ = a.LastSeen(ctx, []string{"u1"})
		if !seen["u1"].Equal(left) {
			t.Fatalf("u1 last seen %v, want the disconnect time %v", seen["u1"], left)
		}
		if a.Online() != 0 || b.Online() != 1 {
			t.Fatalf("online counts %d %d", a.Online(), b.Online())
		}
	})
}

// A node that dies stops refreshing: its users read as gone after the TTL.
func TestDeadNodeAgesOut(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx := context.Background()
	a := presence.New(presence.Config{Redis: rdb, Node: "a", TTL: 3 * time.Second})
	a.Connected(ctx, "u")
	mr.FastForward(4 * time.Second)
	if seen, _ := a.LastSeen(ctx, []string{"u"}); len(seen) != 0 {
		t.Fatalf("user of a dead node still seen: %v", seen)
	}
}

func TestRunRefreshes(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	a := presence.New(presence.Config{Redis: rdb, Node: "a", TTL: 300 * time.Millisecond})
	a.Connected(ctx, "u")
	mr.FastForward(200 * time.Millisecond) // 100ms of the record's life left
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	time.Sleep(250 * time.Millisecond)     // a refresh every 100ms resets it to 300ms
	mr.FastForward(200 * time.Millisecond) // without a refresh the record would be gone
	if node, ok, err := a.Where(ctx, "u"); !ok || node != "a" || err != nil {
		t.Fatalf("after refreshes: %q %v %v", node, ok, err)
	}
	cancel()
	<-done
}
