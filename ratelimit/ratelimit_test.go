package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
)

// clock is a settable clock.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.ns.Store(t.UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func mustLimiter(t *testing.T, rdb redis.UniversalClient, prefix string, now func() time.Time) *Limiter {
	t.Helper()
	l, err := New(Config{Redis: rdb, Prefix: prefix, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestParseLimit(t *testing.T) {
	for in, want := range map[string]Limit{
		"30/1m": {N: 30, Per: time.Minute}, " 10 / 1s ": {N: 10, Per: time.Second}, "off": {}, "0": {}, "": {},
		"1000000/1s": {N: 1000000, Per: time.Second},
		"10/10s:5":   {N: 10, Per: 10 * time.Second, Burst: 5}, "1/1m:3": {N: 1, Per: time.Minute, Burst: 3},
		"10/10s:10": {N: 10, Per: 10 * time.Second},
	} {
		got, err := ParseLimit(in)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"30", "x/1m", "-1/1m", "0/1m", "10/x", "10/0s", "10/-1s", "2000000/1s", "10/25h", "5/1µs",
		"10/10s:", "10/10s:0", "10/10s:-1", "10/10s:x", ":5", "1/1h:25"} {
		if l, err := ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) = %v, want an error", in, l)
		}
	}
	for l, want := range map[Limit]string{
		{N: 30, Per: time.Minute}:                  "30/1m0s",
		{N: 10, Per: 10 * time.Second, Burst: 5}:   "10/10s:5",
		{N: 10, Per: 10 * time.Second, Burst: 10}:  "10/10s",
		{N: 10, Per: 10 * time.Second, Burst: 100}: "10/10s:100",
	} {
		if s := l.String(); s != want {
			t.Errorf("String(%#v) = %q, want %q", l, s, want)
		}
		back, err := ParseLimit(l.String())
		if err != nil || back.N != l.N || back.Per != l.Per || back.BurstOrN() != l.BurstOrN() {
			t.Errorf("String does not round-trip: %v → %#v, %v", l, back, err)
		}
	}
}

// TestGCRA checks the limiter on an injected clock against miniredis and
// real Redis: a burst of N, then one event per interval.
func TestGCRA(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		clk := newClock(time.Now())
		l := mustLimiter(t, rdb, prefix, clk.Now)
		lim := Limit{N: 5, Per: 10 * time.Second} // one every 2s, burst 5
		for i := range 5 {
			d, err := l.Allow(ctx, "join", "alice", lim)
			if err != nil || !d.Allowed || d.Remaining != 4-i {
				t.Fatalf("event %d: %+v %v", i, d, err)
			}
		}
		d, err := l.Allow(ctx, "join", "alice", lim)
		if err != nil || d.Allowed || d.RetryAfter != 2*time.Second {
			t.Fatalf("6th event: %+v %v, want refused with 2s", d, err)
		}
		// Refusals do not consume: after the interval exactly one more fits.
		clk.Advance(1999 * time.Millisecond)
		if d, _ := l.Allow(ctx, "join", "alice", lim); d.Allowed || d.RetryAfter != time.Millisecond {
			t.Fatalf("just before the interval: %+v", d)
		}
		clk.Advance(time.Millisecond)
		if d, _ := l.Allow(ctx, "join", "alice", lim); !d.Allowed {
			t.Fatalf("after the interval: %+v", d)
		}
		if d, _ := l.Allow(ctx, "join", "alice", lim); d.Allowed {
			t.Fatalf("second event after one interval: %+v", d)
		}
		// Subjects and names are independent.
		if d, _ := l.Allow(ctx, "join", "bob", lim); !d.Allowed {
			t.Fatal("bob limited by alice")
		}
		if d, _ := l.Allow(ctx, "connect", "alice", lim); !d.Allowed {
			t.Fatal("another limit's name shares alice's budget")
		}
		// After Per the whole burst is back, and the key is gone.
		clk.Advance(10 * time.Second)
		for i := range 5 {
			if d, _ := l.Allow(ctx, "join", "alice", lim); !d.Allowed {
				t.Fatalf("refilled burst, event %d refused", i)
			}
		}
		// Off limits allow without touching Redis.
		if d, err := l.Allow(ctx, "join", "alice", Limit{}); err != nil || !d.Allowed {
			t.Fatalf("off limit: %+v %v", d, err)
		}
	})
}

// TestGCRABurst checks a burst apart from the rate, on miniredis and real
// Redis: 10 per 10s with a burst of 5 allows 5 at once, then one a second,
// and a steady pace of one a second is never refused.
func TestGCRABurst(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		clk := newClock(time.Now())
		l := mustLimiter(t, rdb, prefix, clk.Now)
		lim := Limit{N: 10, Per: 10 * time.Second, Burst: 5}
		allowed := 0
		for range 50 { // a flood: 50 at once
			d, err := l.Allow(ctx, "join", "flood", lim)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowed++
			} else if d.RetryAfter != time.Second {
				t.Fatalf("refusal with RetryAfter %v, want 1s", d.RetryAfter)
			}
		}
		if allowed != 5 {
			t.Fatalf("%d of a flood of 50 allowed, want the burst of 5", allowed)
		}
		clk.Advance(time.Second)
		if d, _ := l.Allow(ctx, "join", "flood", lim); !d.Allowed {
			t.Fatalf("one interval later: %+v", d)
		}
		if d, _ := l.Allow(ctx, "join", "flood", lim); d.Allowed {
			t.Fatalf("two events one interval later: %+v", d)
		}
		// The whole burst is back after 5 intervals, not after Per.
		clk.Advance(5 * time.Second)
		for i := range 5 {
			if d, _ := l.Allow(ctx, "join", "flood", lim); !d.Allowed {
				t.Fatalf("refilled burst, event %d refused", i)
			}
		}
		// A steady pace at the rate is never refused.
		for i := range 100 {
			clk.Advance(time.Second)
			if d, _ := l.Allow(ctx, "join", "steady", lim); !d.Allowed {
				t.Fatalf("steady event %d refused: %+v", i, d)
			}
		}
	})
}

// TestGCRAServerClock uses the Redis server's clock and checks that the key
// expires once the budget is whole again.
func TestGCRAServerClock(t *testing.T) {
	rdb := redistest.Real(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	l := mustLimiter(t, rdb, prefix, nil)
	lim := Limit{N: 3, Per: 300 * time.Millisecond}
	for i := range 3 {
		if d, err := l.Allow(ctx, "c", "1.2.3.4", lim); err != nil || !d.Allowed {
			t.Fatalf("event %d: %+v %v", i, d, err)
		}
	}
	d, err := l.Allow(ctx, "c", "1.2.3.4", lim)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 100*time.Millisecond {
		t.Fatalf("4th: %+v %v", d, err)
	}
	ttl := rdb.PTTL(ctx, l.Key("c", "1.2.3.4")).Val()
	if ttl <= 0 || ttl > 300*time.Millisecond {
		t.Fatalf("key TTL %v", ttl)
	}
	time.Sleep(d.RetryAfter + 5*time.Millisecond)
	if d, _ := l.Allow(ctx, "c", "1.2.3.4", lim); !d.Allowed {
		t.Fatalf("after RetryAfter: %+v", d)
	}
	time.Sleep(350 * time.Millisecond)
	if n := rdb.Exists(ctx, l.Key("c", "1.2.3.4")).Val(); n != 0 {
		t.Fatal("idle subject's key did not expire")
	}
}

// TestGCRAAcrossGateways: two limiters (two gateways) hammering one subject
// concurrently allow exactly N events between them.
func TestGCRAAcrossGateways(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		a := mustLimiter(t, rdb, prefix, nil)
		b := mustLimiter(t, rdb, prefix, nil)
		lim := Limit{N: 25, Per: time.Hour}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range 40 {
			l := a
			if i%2 == 1 {
				l = b
			}
			wg.Go(func() {
				for range 5 {
					d, err := l.Allow(ctx, "join", "mallory", lim)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := allowed.Load(); n != 25 {
			t.Fatalf("%d events allowed across two gateways, want 25", n)
		}
	})
}

func TestSockets(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		clk := newClock(time.Now())
		s, err := NewSockets(SocketsConfig{Redis: rdb, Prefix: prefix, TTL: time.Minute, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		acquire := func(user, id string, max int) bool {
			t.Helper()
			ok, err := s.Acquire(ctx, user, id, max)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for i := range 3 {
			if !acquire("u", "node-a/"+string(rune('0'+i)), 3) {
				t.Fatalf("lease %d refused", i)
			}
		}
		if acquire("u", "node-b/9", 3) {
			t.Fatal("4th socket allowed with a cap of 3")
		}
		if !acquire("u", "node-a/1", 3) {
			t.Fatal("re-acquiring a held lease refused")
		}
		if !acquire("other", "node-b/9", 3) {
			t.Fatal("another user refused")
		}
		if !acquire("u", "x", 0) {
			t.Fatal("no cap refused")
		}
		if err := s.Release(ctx, "u", "node-a/0"); err != nil {
			t.Fatal(err)
		}
		if !acquire("u", "node-b/9", 3) {
			t.Fatal("released lease not reusable")
		}
		// A dead node's leases stop counting after the TTL; renewed ones stay.
		clk.Advance(40 * time.Second)
		if err := s.Renew(ctx, []Lease{{"u", "node-b/9"}, {"u", "gone"}}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(30 * time.Second)
		for _, id := range []string{"n/1", "n/2"} {
			if !acquire("u", id, 3) {
				t.Fatalf("expired leases still count (%s)", id)
			}
		}
		if acquire("u", "n/3", 3) {
			t.Fatal("renewed lease was dropped")
		}
		if n := rdb.ZScore(ctx, s.Key("u"), "gone").Err(); n != redis.Nil {
			t.Fatal("Renew created a lease")
		}
	})
}

func TestBucket(t *testing.T) {
	now := time.Now()
	b := NewBucket(Limit{N: 4, Per: time.Second}, now)
	for i := range 4 {
		if !b.Allow(now) {
			t.Fatalf("burst token %d refused", i)
		}
	}
	if b.Allow(now) {
		t.Fatal("5th token at once")
	}
	if !b.Allow(now.Add(250 * time.Millisecond)) {
		t.Fatal("token not back after 1/rate")
	}
	if b.Allow(now.Add(250 * time.Millisecond)) {
		t.Fatal("two tokens after 1/rate")
	}
	// A long idle period refills to the burst, no more.
	later := now.Add(time.Hour)
	for i := range 4 {
		if !b.Allow(later) {
			t.Fatalf("after idle, token %d refused", i)
		}
	}
	if b.Allow(later) {
		t.Fatal("bucket overfilled")
	}
	// A burst apart from the rate: 2 at once, 4 a second.
	nb := NewBucket(Limit{N: 4, Per: time.Second, Burst: 2}, now)
	if !nb.Allow(now) || !nb.Allow(now) || nb.Allow(now) {
		t.Fatal("bucket with burst 2 did not allow exactly 2 at once")
	}
	if !nb.Allow(later) || !nb.Allow(later) || nb.Allow(later) {
		t.Fatal("bucket with burst 2 refilled past its burst")
	}
	off := NewBucket(Limit{}, now)
	for range 1000 {
		if !off.Allow(now) {
			t.Fatal("off bucket refused")
		}
	}
}
