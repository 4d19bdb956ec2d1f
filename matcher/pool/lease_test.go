package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
)

func TestLease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		tokA, err := p.AcquireLease(ctx, part, "a", time.Minute, 0)
		if err != nil || tokA != 1 {
			t.Fatalf("first acquire = %d, %v; want token 1", tokA, err)
		}
		if tok, err := p.AcquireLease(ctx, part, "b", time.Minute, 0); err != nil || tok != 0 {
			t.Fatalf("acquire of a held lease = %d, %v; want 0", tok, err)
		}
		if ok, err := p.RenewLease(ctx, part, "b", tokA, time.Minute); err != nil || ok {
			t.Fatalf("renew by a non-owner = %v, %v", ok, err)
		}
		if ok, err := p.RenewLease(ctx, part, "a", tokA, time.Minute); err != nil || !ok {
			t.Fatalf("renew by the owner = %v, %v", ok, err)
		}
		if ok, _ := p.ReleaseLease(ctx, part, "b", tokA); ok {
			t.Fatal("a non-owner released the lease")
		}
		if ok, err := p.ReleaseLease(ctx, part, "a", tokA); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		tokB, err := p.AcquireLease(ctx, part, "b", time.Minute, 0)
		if err != nil || tokB != tokA+1 {
			t.Fatalf("takeover token = %d, %v; want %d", tokB, err, tokA+1)
		}
		// The old owner can neither renew nor claim with its token.
		if ok, _ := p.RenewLease(ctx, part, "a", tokA, time.Minute); ok {
			t.Fatal("stale owner renewed")
		}
		xy := []Entry{entry("x", 10, 0, time.Minute), entry("y", 10, time.Second, time.Minute)}
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
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		p := New(rdb, prefix)
		part := "q:global"
		old, _ := p.AcquireLease(ctx, part, "a", time.Minute, 0)
		if err := redistest.DeletePrefix(ctx, rdb, prefix); err != nil {
			t.Fatal(err)
		}
		tok, err := p.AcquireLease(ctx, part, "b", time.Minute, 41)
		if err != nil || tok != 42 {
			t.Fatalf("acquire with floor 41 = %d, %v; want 42", tok, err)
		}
		if ok, _ := p.RenewLease(ctx, part, "a", old, time.Minute); ok {
			t.Fatal("owner from before the wipe renewed")
		}
		if ok, _ := p.RenewLease(ctx, part, "b", tok, time.Minute); !ok {
			t.Fatal("new owner could not renew")
		}
	})
}

func TestLeaseExpires(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	ctx := context.Background()
	p := New(rdb, "mg")
	tok, _ := p.AcquireLease(ctx, "q:global", "a", 10*time.Second, 0)
	mr.FastForward(11 * time.Second)
	if ok, _ := p.RenewLease(ctx, "q:global", "a", tok, 10*time.Second); ok {
		t.Fatal("renewed an expired lease")
	}
	if tok2, _ := p.AcquireLease(ctx, "q:global", "b", 10*time.Second, 0); tok2 != tok+1 {
		t.Fatalf("takeover after expiry got token %d", tok2)
	}
}

// Watched lists the tickets silent for the heartbeat timeout, longest
// silent first; a heartbeat takes a ticket off the list until its new
// timeout runs out, and claimed or removed tickets are never on it.
func TestWatchedSilent(t *testing.T) {
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
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
		if _, err := p.Claim(ctx, part, 0, "m", []Entry{b, c}); err != nil {
			t.Fatal(err)
		}
		if got, _ := p.Watched(ctx, part, t0.Add(time.Hour), 10); len(got) != 1 || got[0].TicketID != "a" || !got[0].Heartbeat.Equal(t0.Add(4*time.Second)) {
			t.Fatalf("after heartbeat and claim: %+v", got)
		}
		if _, err := p.Requeue(ctx, part, []Entry{b}, hashTTL, time.Time{}, hbTimeout); err != nil {
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
