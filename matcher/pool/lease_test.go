package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

func TestLease(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		tokA, err := p.AcquireLease(ctx, part, "a", t0, time.Minute, 0)
		if err != nil || tokA != 1 {
			t.Fatalf("first acquire = %d, %v; want token 1", tokA, err)
		}
		if tok, err := p.AcquireLease(ctx, part, "b", t0, time.Minute, 0); err != nil || tok != 0 {
			t.Fatalf("acquire of a held lease = %d, %v; want 0", tok, err)
		}
		if ok, err := p.RenewLease(ctx, part, "b", tokA, t0, time.Minute); err != nil || ok {
			t.Fatalf("renew by a non-owner = %v, %v", ok, err)
		}
		if ok, err := p.RenewLease(ctx, part, "a", tokA, t0, time.Minute); err != nil || !ok {
			t.Fatalf("renew by the owner = %v, %v", ok, err)
		}
		if ok, _ := p.ReleaseLease(ctx, part, "b", tokA); ok {
			t.Fatal("a non-owner released the lease")
		}
		if ok, err := p.ReleaseLease(ctx, part, "a", tokA); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		tokB, err := p.AcquireLease(ctx, part, "b", t0, time.Minute, 0)
		if err != nil || tokB != tokA+1 {
			t.Fatalf("takeover token = %d, %v; want %d", tokB, err, tokA+1)
		}
		// The old owner can neither renew nor claim with its token.
		if ok, _ := p.RenewLease(ctx, part, "a", tokA, t0, time.Minute); ok {
			t.Fatal("stale owner renewed")
		}
		xy := []matcher.Entry{entry("x", 10, 0, time.Minute), entry("y", 10, time.Second, time.Minute)}
		mustEnqueue(t, p, part, xy...)
		if _, err := p.Claim(ctx, part, tokA, "m1", xy); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("claim with the stale token: %v", err)
		}
		if res, err := p.Claim(ctx, part, tokB, "m1", xy); err != nil || !res.OK {
			t.Fatalf("claim with the current token: %+v %v", res, err)
		}
	})
}

// After a wipe the counter restarts; the floor from the record keeps tokens
// growing, and an owner of the old era is refused.
func TestLeaseFloorAfterWipe(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		old, _ := p.AcquireLease(ctx, part, "a", t0, time.Minute, 0)
		if err := redistest.DeletePrefix(ctx, rdb, prefix); err != nil {
			t.Fatal(err)
		}
		tok, err := p.AcquireLease(ctx, part, "b", t0, time.Minute, 41)
		if err != nil || tok != 42 {
			t.Fatalf("acquire with floor 41 = %d, %v; want 42", tok, err)
		}
		if ok, _ := p.RenewLease(ctx, part, "a", old, t0, time.Minute); ok {
			t.Fatal("owner from before the wipe renewed")
		}
		if ok, _ := p.RenewLease(ctx, part, "b", tok, t0, time.Minute); !ok {
			t.Fatal("new owner could not renew")
		}
	})
}

// A lease is held, renewed and taken over by the caller's clock, with no
// real time passing: Redis still has the key when its stored expiry has
// passed, and that decides nothing.
func TestLeaseByTheCallersClock(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		tok, err := p.AcquireLease(ctx, part, "a", t0, 4*time.Second, 0)
		if err != nil || tok != 1 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		if v := rdb.Get(ctx, p.LeaseKey(part)).Val(); v != "a 1 "+msTime(t0.Add(4*time.Second)) {
			t.Fatalf("lease value %q", v)
		}
		// The key outlives the lease by the safety margin, and no more.
		if ttl := rdb.PTTL(ctx, p.LeaseKey(part)).Val(); ttl <= 4*time.Second || ttl > 4*time.Second+expirySlack {
			t.Fatalf("key expiry %v, want within (4s, 4s+%v]", ttl, expirySlack)
		}
		if other, _ := p.AcquireLease(ctx, part, "b", t0.Add(3*time.Second), 4*time.Second, 0); other != 0 {
			t.Fatalf("acquired at T+3s a lease held until T+4s: %d", other)
		}
		// At its expiry it is lost to its owner, though Redis keeps the key.
		if ok, err := p.RenewLease(ctx, part, "a", tok, t0.Add(4*time.Second), 4*time.Second); err != nil || ok {
			t.Fatalf("renew at the expiry = %v, %v", ok, err)
		}
		if n := rdb.Exists(ctx, p.LeaseKey(part)).Val(); n != 1 {
			t.Fatal("the key is gone: this test would not tell the clocks apart")
		}
		tokB, err := p.AcquireLease(ctx, part, "b", t0.Add(5*time.Second), 4*time.Second, 0)
		if err != nil || tokB != tok+1 {
			t.Fatalf("take over at T+5s = %d, %v; want %d", tokB, err, tok+1)
		}
		if ok, _ := p.RenewLease(ctx, part, "a", tok, t0.Add(3*time.Second), 4*time.Second); ok {
			t.Fatal("the previous owner renewed after the takeover")
		}
		if ok, _ := p.ReleaseLease(ctx, part, "a", tok); ok {
			t.Fatal("the previous owner released the new owner's lease")
		}
		// Renewed at T+8s, b holds it until T+12s.
		if ok, err := p.RenewLease(ctx, part, "b", tokB, t0.Add(8*time.Second), 4*time.Second); err != nil || !ok {
			t.Fatalf("renew by the new owner = %v, %v", ok, err)
		}
		if other, _ := p.AcquireLease(ctx, part, "a", t0.Add(11*time.Second), 4*time.Second, 0); other != 0 {
			t.Fatalf("acquired at T+11s a lease renewed until T+12s: %d", other)
		}
		if other, _ := p.AcquireLease(ctx, part, "a", t0.Add(12*time.Second), 4*time.Second, 0); other != tokB+1 {
			t.Fatalf("acquire at T+12s = %d, want %d", other, tokB+1)
		}
	})
}

// A lease written before the value held its expiry ("<owner> <token>") is
// held until Redis expires it, whatever the caller's clock: a rolling
// upgrade never takes a lease from an owner of the previous version early.
// Its owner may still renew and release it.
func TestLeaseOfThePreviousFormat(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx := context.Background()
	p := New(rdb, "mg")
	part := "q:global"
	key := p.LeaseKey(part)
	if err := rdb.Set(ctx, p.FenceKey(part), 7, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, key, "old 7", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	far := t0.Add(1000 * time.Hour)
	if tok, _ := p.AcquireLease(ctx, part, "new", far, 4*time.Second, 0); tok != 0 {
		t.Fatalf("took a lease of the previous format by the clock: %d", tok)
	}
	if ok, err := p.RenewLease(ctx, part, "old", 7, t0, 4*time.Second); err != nil || !ok {
		t.Fatalf("renew by its owner = %v, %v", ok, err)
	}
	if v := rdb.Get(ctx, key).Val(); v != "old 7 "+msTime(t0.Add(4*time.Second)) {
		t.Fatalf("renewed value %q", v)
	}
	if err := rdb.Set(ctx, key, "old 7", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.ReleaseLease(ctx, part, "old", 7); err != nil || !ok {
		t.Fatalf("release by its owner = %v, %v", ok, err)
	}
	if err := rdb.Set(ctx, key, "old 7", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	mr.FastForward(11 * time.Second)
	if tok, _ := p.AcquireLease(ctx, part, "new", t0, 4*time.Second, 0); tok != 8 {
		t.Fatalf("acquire once Redis expired it = %d, want 8", tok)
	}
}

// The key's expiry is the safety net: Redis's time passing decides nothing
// while the key lives, and a lease whose key Redis let go is free.
func TestLeaseKeyExpiryIsASafetyNet(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx := context.Background()
	p := New(rdb, "mg")
	tok, _ := p.AcquireLease(ctx, "q:global", "a", t0, 10*time.Second, 0)
	mr.FastForward(11 * time.Second)
	if other, _ := p.AcquireLease(ctx, "q:global", "b", t0.Add(5*time.Second), 10*time.Second, 0); other != 0 {
		t.Fatalf("took over by Redis's clock at T+5s on the caller's: %d", other)
	}
	if ok, _ := p.RenewLease(ctx, "q:global", "a", tok, t0.Add(5*time.Second), 10*time.Second); !ok {
		t.Fatal("renew within the lease by the caller's clock refused")
	}
	mr.FastForward(10*time.Second + expirySlack)
	if tok2, _ := p.AcquireLease(ctx, "q:global", "b", t0.Add(6*time.Second), 10*time.Second, 0); tok2 != tok+1 {
		t.Fatalf("acquire after the key expired = %d, want %d", tok2, tok+1)
	}
}

// Watched lists the tickets silent for the heartbeat timeout, longest
// silent first; a heartbeat takes a ticket off the list until its new
// timeout runs out, and claimed or removed tickets are never on it.
func TestWatchedSilent(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		a, b, c := entry("a", 10, 0, time.Hour), entry("b", 10, time.Second, time.Hour), entry("c", 10, 2*time.Second, time.Hour)
		c.Heartbeat = t0.Add(5 * time.Second)
		mustEnqueue(t, p, part, a, b, c)
		// Silent since before t0+3s: a and b, not c (seen at t0+5s).
		silent := t0.Add(3*time.Second + hbTimeout)
		got, err := p.Watched(ctx, part, silent, 10)
		if err != nil || len(got) != 2 || got[0].TicketID != "a" || got[1].TicketID != "b" {
			t.Fatalf("watched = %+v, %v; want a, b", got, err)
		}
		if !got[0].Heartbeat.Equal(t0) || got[0].UserID != "u-a" {
			t.Fatalf("watched entry fields: %+v", got[0])
		}
		if ok, err := p.Heartbeat(ctx, part, "a", t0.Add(4*time.Second), hbTimeout); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got, err := p.Watched(ctx, part, silent, 10); err != nil || len(got) != 1 || got[0].TicketID != "b" {
			t.Fatalf("after a's heartbeat: %+v, %v; want b", got, err)
		}
		if _, err := p.Claim(ctx, part, 0, "m", []matcher.Entry{b, c}); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Watched(ctx, part, t0.Add(time.Hour), 10); len(got) != 1 || got[0].TicketID != "a" || !got[0].Heartbeat.Equal(t0.Add(4*time.Second)) {
			t.Fatalf("after heartbeat and claim: %+v", got)
		}
		if _, err := p.Requeue(ctx, part, []matcher.Entry{b}, hashTTL, time.Time{}, hbTimeout); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Remove(ctx, part, "a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Watched(ctx, part, t0.Add(time.Hour), 10); len(got) != 1 || got[0].TicketID != "b" {
			t.Fatalf("after requeue and remove: %+v", got)
		}
	})
}
