package presence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/presence"
)

func TestPresence(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
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

// Run rewrites the records one slot at a time, each user once per TTL/3,
// not every record in one burst.
func TestRunSpreadsTheRefresh(t *testing.T) {
	const users, period = 20, 200 * time.Millisecond // TTL/3: 20 slots, 10 ms apart
	rdb, _ := redistest.MiniServer(t)
	sets := &setLog{at: map[string][]time.Time{}}
	rdb.AddHook(sets)
	ctx, cancel := context.WithCancel(context.Background())
	a := presence.New(presence.Config{Redis: rdb, Node: "a", TTL: 3 * period})
	for i := range users {
		if err := a.Connected(ctx, fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	a.Disconnected("u0") // gone before Run: its record must stay "last seen"
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for !sets.everyOneAtLeast(users-1, 3) {
		if time.Now().After(deadline) {
			t.Fatal("not every record was refreshed three times")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if node, ok, err := a.Where(context.Background(), "u0"); ok || err != nil {
		t.Fatalf("a user who left was refreshed as online on %q (%v)", node, err)
	}
	sets.mu.Lock()
	defer sets.mu.Unlock()
	for _, n := range sets.sizes {
		if n > 1 {
			t.Fatalf("a refresh rewrote %d records: 19 users in 20 slots should be rewritten one at a time (sizes %v)", n, sets.sizes)
		}
	}
	for u, at := range sets.at {
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < period/2 {
				t.Errorf("%s refreshed %v after the previous refresh, want about %v", u, gap, period)
			}
		}
	}
}

// setLog records the pipelines of SETs that go through a client: their
// sizes, and when each key was set.
type setLog struct {
	mu    sync.Mutex
	sizes []int
	at    map[string][]time.Time
}

func (l *setLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (l *setLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (l *setLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		now := time.Now()
		l.mu.Lock()
		n := 0
		for _, c := range cmds {
			if c.Name() == "set" {
				n++
				key := fmt.Sprint(c.Args()[1])
				l.at[key] = append(l.at[key], now)
			}
		}
		if n > 0 {
			l.sizes = append(l.sizes, n)
		}
		l.mu.Unlock()
		return next(ctx, cmds)
	}
}

// everyOneAtLeast reports whether users keys were each set at least n times.
func (l *setLog) everyOneAtLeast(users, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.at) < users {
		return false
	}
	for _, at := range l.at {
		if len(at) < n {
			return false
		}
	}
	return true
}

// A user who reconnected to another node before this one saw the old socket
// close stays online there: the late close does not write "last seen" over
// the other node's record (lua/disconnect.lua).
func TestLateCloseKeepsAnotherNodesRecord(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		now := time.UnixMilli(1_800_000_000_000)
		clock := func() time.Time { return now }
		a := presence.New(presence.Config{Redis: rdb, Prefix: prefix, Node: "a", Now: clock})
		b := presence.New(presence.Config{Redis: rdb, Prefix: prefix, Node: "b", Now: clock})
		a.Connected(ctx, "u")
		b.Connected(ctx, "u") // the reconnect, on b
		a.Disconnected("u")   // a notices the old socket gone
		if node, ok, err := a.Where(ctx, "u"); !ok || node != "b" || err != nil {
			t.Fatalf("after a late close on a: %q %v %v, want online on b", node, ok, err)
		}
		// A's own record, or an "off" one, is still replaced.
		b.Disconnected("u")
		if _, ok, _ := a.Where(ctx, "u"); ok {
			t.Fatal("the last close on b left the user online")
		}
		now = now.Add(time.Second)
		a.Connected(ctx, "v")
		a.Disconnected("v")
		if seen, _ := a.LastSeen(ctx, []string{"u", "v"}); !seen["v"].Equal(now) || !seen["u"].Equal(now.Add(-time.Second)) {
			t.Fatalf("last seen %v", seen)
		}
	})
}

// SetTTL changes the life of the records written from then on and how often
// Run rewrites them; it takes nothing below MinTTL.
func TestSetTTL(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := presence.New(presence.Config{Redis: rdb, Node: "a", TTL: time.Hour})
	a.SetTTL(time.Millisecond)
	if a.TTL() != presence.MinTTL {
		t.Fatalf("TTL %v after SetTTL(1ms), want %v", a.TTL(), presence.MinTTL)
	}
	a.Connected(ctx, "u")
	if ttl := mr.TTL(a.Key("u")); ttl != presence.MinTTL {
		t.Fatalf("record written with life %v, want %v", ttl, presence.MinTTL)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	// Refreshed every second now, not every 20 minutes: within 5 s of real
	// time the record has been rewritten (its TTL reset) after being aged.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mr.FastForward(2 * time.Second) // 1 s left unless rewritten since
		time.Sleep(1500 * time.Millisecond)
		if mr.TTL(a.Key("u")) == presence.MinTTL {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no refresh at the shorter TTL")
		}
	}
	cancel()
	<-done
}

func TestTTLFor(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{30 * time.Second, 15 * time.Second},
		{8 * time.Second, 8 * time.Second},
		{time.Second, presence.MinTTL},
	} {
		if got := presence.TTLFor(c.timeout); got != c.want {
			t.Errorf("TTLFor(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
}
