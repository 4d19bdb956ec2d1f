package pool

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestEndsByTheClockNotTheKey: what Redis holds past the end a clock gave
// it decides nothing (the contract suite checks the outcomes on every
// pool; this checks the keys are there all along), a hash written before
// its end was stored lives until Redis expires it, and each key outlives
// its end by expirySlack alone. Against miniredis and a real Redis.
func TestEndsByTheClockNotTheKey(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		now := t0
		p := New(rdb, prefix, WithClock(func() time.Time { return now }), WithClaimTTL(5*time.Second))
		const part = "end:eu"
		keyTTL := func(key string) time.Duration {
			t.Helper()
			d, err := rdb.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}

		a := entry("a", 1, 0, time.Hour)
		mustEnqueue(t, p, part, a)
		if r, err := p.Claim(ctx, part, 0, "m", []matcher.Entry{a}); err != nil || !r.OK {
			t.Fatalf("claim = %+v, %v", r, err)
		}
		if d := keyTTL(p.ticketKey(part, "a")); d <= 5*time.Second || d > 5*time.Second+expirySlack {
			t.Fatalf("claimed hash's key ttl %v, want within (5s, %v]", d, 5*time.Second+expirySlack)
		}
		now = t0.Add(5 * time.Second)
		if rdb.Exists(ctx, p.ticketKey(part, "a")).Val() != 1 {
			t.Fatal("Redis let the mark go: the test would not tell the clocks apart")
		}
		if r, _ := p.RemoveEntry(ctx, []string{part}, a); r.ClaimedBy != "" {
			t.Fatalf("cancel after the mark's end by the clock = %+v", r)
		}
		if rdb.Exists(ctx, p.ticketKey(part, "a")).Val() != 0 {
			t.Fatal("an ended mark was left behind by the cancel")
		}

		// A hash as the previous version wrote it, with no end of its own:
		// Redis's expiry alone ends it.
		b := entry("b", 1, 0, time.Hour)
		mustEnqueue(t, p, part, b)
		if err := rdb.HDel(ctx, p.ticketKey(part, "b"), "exp").Err(); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(1000 * time.Hour)
		if added, _ := p.Enqueue(ctx, part, b, hashTTL, hbTimeout); added {
			t.Fatal("a hash with no end of its own was ended by the clock")
		}
		if ok, _ := p.Heartbeat(ctx, part, "b", now, hbTimeout); !ok {
			t.Fatal("heartbeat of a hash with no end of its own refused")
		}
		if _, _, found, _ := p.Locate(ctx, []string{part}, "b"); !found {
			t.Fatal("a hash with no end of its own not located")
		}

		// The previous version claims a ticket a new process enqueued, and
		// puts back one a new process claimed, without writing an end:
		// the end left from the other state is ignored.
		c := entry("c", 1, 0, time.Hour)
		now = t0
		mustEnqueue(t, p, part, c)
		if err := rdb.HSet(ctx, p.ticketKey(part, "c"), "state", "claimed", "match", "old-m", "from", p.Key(part, "pool"), "fence", "0").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZRem(ctx, p.Key(part, "pool"), member(c)).Err(); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(1000 * time.Hour)
		if r, _ := p.RemoveEntry(ctx, []string{part}, c); r.ClaimedBy != "old-m" {
			t.Fatalf("cancel of a ticket the previous version claimed = %+v", r)
		}
		d := entry("d", 1, 0, time.Hour)
		now = t0
		mustEnqueue(t, p, part, d)
		if r, err := p.Claim(ctx, part, 0, "m-d", []matcher.Entry{d}); err != nil || !r.OK {
			t.Fatalf("claim d = %+v, %v", r, err)
		}
		if err := rdb.HSet(ctx, p.ticketKey(part, "d"), "state", "waiting").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HDel(ctx, p.ticketKey(part, "d"), "match", "from", "fence").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZAdd(ctx, p.Key(part, "pool"), redis.Z{Score: 1, Member: member(d)}).Err(); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(time.Hour)
		if ok, _ := p.Heartbeat(ctx, part, "d", now, hbTimeout); !ok {
			t.Fatal("heartbeat of a ticket the previous version put back refused")
		}
		if _, _, found, _ := p.Locate(ctx, []string{part}, "d"); !found {
			t.Fatal("a ticket the previous version put back not located")
		}

		// An offer lives by its score; its hash a little longer.
		now = t0
		o := entry("o", 5, 0, time.Minute)
		if _, err := p.Offer(ctx, "end:us", part, []matcher.Entry{o}, t0, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if d := keyTTL(p.Key("end:us", "o:o")); d <= 10*time.Second || d > 10*time.Second+expirySlack {
			t.Fatalf("offer hash's key ttl %v, want within (10s, %v]", d, 10*time.Second+expirySlack)
		}
		if got, _ := p.Offers(ctx, "end:us", t0.Add(10*time.Second), 5); len(got) != 1 {
			t.Fatalf("offers at the expiry = %+v", got)
		}
		if got, _ := p.Offers(ctx, "end:us", t0.Add(10*time.Second+time.Millisecond), 5); len(got) != 0 {
			t.Fatalf("offers past the expiry = %+v", got)
		}
	})
}
