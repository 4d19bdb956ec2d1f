package pool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// contract is the live pool's contract as matcher uses it (engine.Pool),
// which the Redis pool and the memory pool both keep.
type contract interface {
	Enqueue(ctx context.Context, partition string, e matcher.Entry, ttl, timeout time.Duration) (bool, error)
	RemoveEntry(ctx context.Context, partitions []string, e matcher.Entry) (RemoveResult, error)
	Heartbeat(ctx context.Context, partition, ticketID string, at time.Time, timeout time.Duration) (bool, error)
	ScanMany(ctx context.Context, partition string, scans []Scan) ([][]matcher.Entry, error)
	Oldest(ctx context.Context, partition string, n int) ([]matcher.Entry, error)
	Nearest(ctx context.Context, partition string, skill float64, n int) ([]matcher.Entry, error)
	Window(ctx context.Context, partition string, lo, hi float64, n int) ([]matcher.Entry, error)
	ClaimMany(ctx context.Context, partition string, fence int64, reqs []ClaimRequest, then ...Scan) ([]Claimed, [][]matcher.Entry, error)
	Claim(ctx context.Context, partition string, fence int64, matchID string, entries []matcher.Entry) (ClaimResult, error)
	Requeue(ctx context.Context, partition string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	RequeueGuarded(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	RequeueMissing(ctx context.Context, partition string, siblings []string, entries []matcher.Entry, ttl time.Duration, lost time.Time, timeout time.Duration) (int, error)
	Members(ctx context.Context, partition string) ([]matcher.Entry, error)
	Size(ctx context.Context, partition string) (int64, error)
	Sizes(ctx context.Context, partitions []string) ([]int64, error)
	Locate(ctx context.Context, partitions []string, ticketID string) (string, matcher.Entry, bool, error)
	Promote(ctx context.Context, from, to string, cutoff time.Time, n int) ([]string, error)
	Offer(ctx context.Context, to, home string, entries []matcher.Entry, now, expiry time.Time) (int, error)
	Offers(ctx context.Context, partition string, now time.Time, n int) ([]matcher.Entry, error)
	WithdrawOffers(ctx context.Context, partition string, ticketIDs ...string) error
	AddPending(ctx context.Context, partition string, ms ...Pending) error
	RemovePending(ctx context.Context, partition string, matchIDs ...string) error
	PendingDue(ctx context.Context, partition string, now time.Time, n int) ([]string, error)
	AcquireLease(ctx context.Context, partition, owner string, now time.Time, ttl time.Duration, floor int64) (int64, error)
	RenewLease(ctx context.Context, partition, owner string, token int64, now time.Time, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, partition, owner string, token int64) (bool, error)
	SetCooldown(ctx context.Context, queue, userID string, now time.Time, d time.Duration) error
	Cooldown(ctx context.Context, queue, userID string, now time.Time) (time.Duration, error)
	RememberSkill(ctx context.Context, userID string, skill float64) error
	LastSkill(ctx context.Context, userID string) (float64, bool, error)
	MarkAllocationFailure(ctx context.Context, partition string, now time.Time, ttl time.Duration) error
	AllocationFailing(ctx context.Context, partition string, now time.Time) (bool, error)
	RecordOutcomes(ctx context.Context, partition string, matchAts []time.Time, outcomes []Outcome) error
	Stats(ctx context.Context, partition string) ([]Outcome, []time.Time, error)
}

func TestContractRedis(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		testContract(t, func(_ *testing.T, clock func() time.Time, claimTTL time.Duration) contract {
			return New(rdb, prefix, WithClock(clock), WithClaimTTL(claimTTL))
		})
	})
}

func TestContractMemory(t *testing.T) {
	testContract(t, func(_ *testing.T, clock func() time.Time, claimTTL time.Duration) contract {
		return NewMemory(clock, claimTTL)
	})
}

// testContract is the behaviour every pool must have. newPoolAt returns a
// pool where the partitions the subtests name are empty, its ticket hashes
// ending by clock (nil: time.Now), a claim's mark lasting claimTTL (0: the
// default).
func testContract(t *testing.T, newPoolAt func(t *testing.T, clock func() time.Time, claimTTL time.Duration) contract) {
	ctx := context.Background()
	newPool := func(t *testing.T) contract { return newPoolAt(t, nil, 0) }
	enq := func(t *testing.T, p contract, part string, es ...matcher.Entry) {
		t.Helper()
		for _, e := range es {
			if added, err := p.Enqueue(ctx, part, e, hashTTL, hbTimeout); err != nil || !added {
				t.Fatalf("enqueue %s = %v, %v", e.TicketID, added, err)
			}
		}
	}

	t.Run("EnqueueIsIdempotent", func(t *testing.T) {
		p := newPool(t)
		a := entry("a", 1500, 0, time.Minute)
		enq(t, p, "ce:eu", a)
		moved := a
		moved.Skill, moved.Enqueue = 9000, t0.Add(time.Second)
		if added, err := p.Enqueue(ctx, "ce:eu", moved, hashTTL, hbTimeout); added || err != nil {
			t.Fatalf("second enqueue = %v, %v; want not added", added, err)
		}
		es, err := p.Members(ctx, "ce:eu")
		if err != nil || len(es) != 1 || es[0].Skill != 1500 || !es[0].Enqueue.Equal(a.Enqueue) || es[0].UserID != "u-a" {
			t.Fatalf("members = %+v, %v", es, err)
		}
		if sz, err := p.Sizes(ctx, []string{"ce:eu", "ce:us"}); err != nil || !slices.Equal(sz, []int64{1, 0}) {
			t.Fatalf("sizes = %v, %v", sz, err)
		}
	})

	t.Run("ClaimAllOrNothingFencedAndMarked", func(t *testing.T) {
		p := newPool(t)
		a, b, c := entry("a", 100, 0, time.Minute), entry("b", 110, time.Second, time.Minute), entry("c", 120, 2*time.Second, time.Minute)
		enq(t, p, "cc:eu", a, b, c)
		tok, err := p.AcquireLease(ctx, "cc:eu", "m1", t0, time.Minute, 0)
		if err != nil || tok <= 0 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		if _, err := p.Claim(ctx, "cc:eu", tok+1, "mx", []matcher.Entry{a}); !errors.Is(err, ErrStaleFence) {
			t.Fatalf("claim with a stale token = %v", err)
		}
		if res, err := p.RemoveEntry(ctx, []string{"cc:eu"}, c); err != nil || !res.Removed {
			t.Fatalf("cancel c = %+v, %v", res, err)
		}
		var anchors [][]matcher.Entry
		cs, read, err := p.ClaimMany(ctx, "cc:eu", tok, []ClaimRequest{
			{MatchID: "m-ac", Entries: []matcher.Entry{a, c}}, // c is gone: nothing claimed
			{MatchID: "m-ab", Entries: []matcher.Entry{a, b}},
			{MatchID: "m-b", Entries: []matcher.Entry{b}}, // b went to the group before
		}, OldestScan(5), AnchorsScan(5, 3, &anchors))
		if err != nil || len(cs) != 3 {
			t.Fatal(cs, err)
		}
		if cs[0].OK || !slices.Equal(cs[0].Missing, []string{"c"}) || !cs[1].OK || cs[2].OK || !slices.Equal(cs[2].Missing, []string{"b"}) {
			t.Fatalf("claims = %+v", cs)
		}
		if len(read) != 2 || len(read[0]) != 0 || anchors != nil {
			t.Fatalf("scans after the claims = %+v, anchors %v", read, anchors)
		}
		// The losing cancel learns which match won.
		if res, err := p.RemoveEntry(ctx, []string{"cc:eu"}, a); err != nil || res.Removed || res.ClaimedBy != "m-ab" {
			t.Fatalf("cancel of a claimed ticket = %+v, %v", res, err)
		}
		if ok, err := p.Heartbeat(ctx, "cc:eu", "a", t0.Add(time.Second), hbTimeout); ok || err != nil {
			t.Fatalf("heartbeat of a claimed ticket = %v, %v", ok, err)
		}
		// A claim's own owner puts them back where they were.
		if n, err := p.Requeue(ctx, "cc:eu", []matcher.Entry{b, a}, hashTTL, t0, hbTimeout); err != nil || n != 2 {
			t.Fatalf("requeue = %d, %v", n, err)
		}
		if es, err := p.Oldest(ctx, "cc:eu", 5); err != nil || !slices.Equal(ids(es), []string{"a", "b"}) {
			t.Fatalf("oldest after requeue = %v, %v", ids(es), err)
		}
	})

	t.Run("NamesRideTheHashToTheClaim", func(t *testing.T) {
		p := newPool(t)
		a, b := entry("a", 100, 0, time.Minute), entry("b", 110, time.Second, time.Minute)
		a.Name = "Ada | ✨" // the member's separator: the name is no field of it
		enq(t, p, "cn:eu", a, b)
		read, err := p.Oldest(ctx, "cn:eu", 5)
		if err != nil || len(read) != 2 || read[0].UserID != "u-a" || read[0].Name != "" {
			t.Fatalf("oldest = %+v, %v; want both, names left to the claim", read, err)
		}
		res, err := p.Claim(ctx, "cn:eu", 0, "m-1", read)
		if err != nil || !res.OK || !slices.Equal(res.Names, []string{"Ada | ✨", ""}) {
			t.Fatalf("claim = %+v, %v; want a's name and none for b", res, err)
		}
		// Put back with the entries a pass read (no names): the hash keeps its own.
		if n, err := p.Requeue(ctx, "cn:eu", read, hashTTL, t0, hbTimeout); err != nil || n != 2 {
			t.Fatalf("requeue = %d, %v", n, err)
		}
		cs, _, err := p.ClaimMany(ctx, "cn:eu", 0, []ClaimRequest{{MatchID: "m-2", Entries: []matcher.Entry{read[1], read[0]}}})
		if err != nil || len(cs) != 1 || !cs[0].OK || !slices.Equal(cs[0].Names, []string{"", "Ada | ✨"}) {
			t.Fatalf("claim after the requeue = %+v, %v", cs, err)
		}
		// The reconciler's requeue from the record brings a name to a ticket
		// the pool never held.
		c := entry("c", 120, 2*time.Second, time.Minute)
		c.Name = "Cyd"
		if n, err := p.Requeue(ctx, "cn:eu", []matcher.Entry{c}, hashTTL, t0, hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue c = %d, %v", n, err)
		}
		c.Name = ""
		if res, err := p.Claim(ctx, "cn:eu", 0, "m-3", []matcher.Entry{c}); err != nil || !res.OK || !slices.Equal(res.Names, []string{"Cyd"}) {
			t.Fatalf("claim of c = %+v, %v", res, err)
		}
	})

	t.Run("RequeueMissingPutsBackDeadClaimsOnly", func(t *testing.T) {
		p := newPool(t)
		a, b := entry("a", 100, 0, time.Minute), entry("b", 200, 0, time.Minute)
		enq(t, p, "cr:eu", a, b)
		tok, _ := p.AcquireLease(ctx, "cr:eu", "m1", t0, time.Minute, 0)
		if res, err := p.Claim(ctx, "cr:eu", tok, "m-a", []matcher.Entry{a}); err != nil || !res.OK {
			t.Fatal(res, err)
		}
		if n, err := p.RequeueMissing(ctx, "cr:eu", nil, []matcher.Entry{a}, hashTTL, t0, hbTimeout); err != nil || n != 0 {
			t.Fatalf("requeue of a live claim = %d, %v", n, err)
		}
		// The owner loses the lease; a new owner's token kills the claim.
		if ok, _ := p.ReleaseLease(ctx, "cr:eu", "m1", tok); !ok {
			t.Fatal("release")
		}
		tok2, err := p.AcquireLease(ctx, "cr:eu", "m2", t0, time.Minute, tok+5)
		if err != nil || tok2 != tok+6 {
			t.Fatalf("acquire over a floor = %d, %v", tok2, err)
		}
		if n, err := p.RequeueMissing(ctx, "cr:eu", nil, []matcher.Entry{a}, hashTTL, t0, hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue of a dead claim = %d, %v", n, err)
		}
		// Guarded: never into a second pool.
		enq(t, p, "cr:eu/s0", entry("c", 300, 0, time.Minute))
		if n, err := p.RequeueGuarded(ctx, "cr:eu/ov", []string{"cr:eu/s0"}, []matcher.Entry{entry("c", 300, 0, time.Minute)}, hashTTL, t0, hbTimeout); err != nil || n != 0 {
			t.Fatalf("guarded requeue of a ticket waiting in a sibling = %d, %v", n, err)
		}
	})

	t.Run("Scans", func(t *testing.T) {
		p := newPool(t)
		es := []matcher.Entry{
			entry("a", 100, 0, 10*time.Minute), entry("b", 150, time.Second, 10*time.Minute),
			entry("c", 200, 2*time.Second, 10*time.Minute), entry("d", 300, 3*time.Second, 10*time.Minute),
			entry("e", 150, 4*time.Second, 20*time.Second),
		}
		enq(t, p, "cs:eu", es...)
		if got, _ := p.Oldest(ctx, "cs:eu", 3); !slices.Equal(ids(got), []string{"a", "b", "c"}) {
			t.Fatalf("oldest = %v", ids(got))
		}
		if got, _ := p.Window(ctx, "cs:eu", 150, 200, 10); !slices.Equal(ids(got), []string{"b", "e", "c"}) {
			t.Fatalf("window = %v", ids(got))
		}
		if got, _ := p.Nearest(ctx, "cs:eu", 160, 3); !slices.Equal(ids(got), []string{"b", "e", "c"}) {
			t.Fatalf("nearest = %v", ids(got))
		}
		// e's deadline passes at 20s, a's silence at its heartbeat timeout.
		if ok, err := p.Heartbeat(ctx, "cs:eu", "b", t0.Add(25*time.Second), hbTimeout); !ok || err != nil {
			t.Fatal(ok, err)
		}
		got, err := p.ScanMany(ctx, "cs:eu", []Scan{WatchScan(t0.Add(20*time.Second), 10), WatchScan(t0.Add(hbTimeout+2*time.Second), 10)})
		if err != nil || !slices.Equal(ids(got[0]), []string{"e"}) || !slices.Equal(ids(got[1]), []string{"e", "a", "c"}) {
			t.Fatalf("watched = %v, %v", got, err)
		}
		if !got[1][1].Heartbeat.Equal(es[0].Enqueue) {
			t.Fatalf("a silent ticket's heartbeat reads as its enqueue: %v", got[1][1].Heartbeat)
		}
		var near [][]matcher.Entry
		if _, err := p.ScanMany(ctx, "cs:eu", []Scan{AnchorsScan(2, 2, &near)}); err != nil || len(near) != 2 ||
			!slices.Equal(ids(near[0]), []string{"a", "b"}) || !slices.Equal(ids(near[1]), []string{"b", "e"}) {
			t.Fatalf("anchors' candidates = %v, %v", near, err)
		}
		if part, e, found, err := p.Locate(ctx, []string{"cs:eu"}, "b"); err != nil || !found || part != "cs:eu" || !e.Heartbeat.Equal(t0.Add(25*time.Second)) {
			t.Fatalf("locate = %s %+v %v %v", part, e, found, err)
		}
	})

	t.Run("PromoteOffersPending", func(t *testing.T) {
		p := newPool(t)
		enq(t, p, "cp:eu/s0", entry("a", 1, 0, time.Minute), entry("b", 2, 10*time.Second, time.Minute))
		if moved, err := p.Promote(ctx, "cp:eu/s0", "cp:eu/ov", t0.Add(5*time.Second), 10); err != nil || !slices.Equal(moved, []string{"a"}) {
			t.Fatalf("promote = %v, %v", moved, err)
		}
		if sz, _ := p.Sizes(ctx, []string{"cp:eu/s0", "cp:eu/ov"}); !slices.Equal(sz, []int64{1, 1}) {
			t.Fatalf("sizes after promote = %v", sz)
		}
		o := entry("o", 5, 0, time.Minute)
		if n, err := p.Offer(ctx, "cp:us", "cp:eu", []matcher.Entry{o}, t0, t0.Add(10*time.Second)); err != nil || n != 1 {
			t.Fatal(n, err)
		}
		if got, err := p.Offers(ctx, "cp:us", t0.Add(10*time.Second), 5); err != nil || len(got) != 1 || got[0].Home != "cp:eu" {
			t.Fatalf("offers = %+v, %v", got, err)
		}
		if got, _ := p.Offers(ctx, "cp:us", t0.Add(11*time.Second), 5); len(got) != 0 {
			t.Fatalf("expired offers = %+v", got)
		}
		_ = p.WithdrawOffers(ctx, "cp:us", "o")
		if got, _ := p.Offers(ctx, "cp:us", t0, 5); len(got) != 0 {
			t.Fatalf("withdrawn offers = %+v", got)
		}
		_ = p.AddPending(ctx, "cp:eu/s0", Pending{MatchID: "m2", AcceptBy: t0.Add(2 * time.Second)}, Pending{MatchID: "m1", AcceptBy: t0.Add(time.Second)})
		if due, _ := p.PendingDue(ctx, "cp:eu", t0.Add(time.Second), 5); !slices.Equal(due, []string{"m1"}) {
			t.Fatalf("due = %v", due)
		}
		_ = p.RemovePending(ctx, "cp:eu", "m1")
		if all, _ := p.PendingDue(ctx, "cp:eu", time.Time{}, 0); !slices.Equal(all, []string{"m2"}) {
			t.Fatalf("all pending = %v", all)
		}
	})

	t.Run("LeasesCooldownsAllocationStats", func(t *testing.T) {
		p := newPool(t)
		tok, _ := p.AcquireLease(ctx, "cl:eu", "m1", t0, time.Minute, 0)
		if other, err := p.AcquireLease(ctx, "cl:eu", "m2", t0, time.Minute, 0); other != 0 || err != nil {
			t.Fatalf("acquire of a held lease = %d, %v", other, err)
		}
		if ok, _ := p.RenewLease(ctx, "cl:eu", "m2", tok, t0, time.Minute); ok {
			t.Fatal("renewed by another owner")
		}
		if ok, _ := p.RenewLease(ctx, "cl:eu", "m1", tok, t0, time.Minute); !ok {
			t.Fatal("renew by the owner refused")
		}
		if ok, _ := p.ReleaseLease(ctx, "cl:eu", "m1", tok+1); ok {
			t.Fatal("released with a wrong token")
		}
		_ = p.SetCooldown(ctx, "cl", "zed", t0, 30*time.Second)
		if d, _ := p.Cooldown(ctx, "cl", "zed", t0.Add(10*time.Second)); d != 20*time.Second {
			t.Fatalf("cooldown = %v", d)
		}
		if d, _ := p.Cooldown(ctx, "cl", "zed", t0.Add(30*time.Second)); d != 0 {
			t.Fatalf("cooldown at its end = %v", d)
		}
		_ = p.MarkAllocationFailure(ctx, "cl:eu", t0, time.Minute)
		if f, _ := p.AllocationFailing(ctx, "cl:eu", t0.Add(59*time.Second)); !f {
			t.Fatal("not failing within the minute")
		}
		if f, _ := p.AllocationFailing(ctx, "cl:eu", t0.Add(time.Minute)); f {
			t.Fatal("failing after the minute")
		}
		_ = p.RememberSkill(ctx, "zed", 12.5)
		if s, ok, _ := p.LastSkill(ctx, "zed"); !ok || s != 12.5 {
			t.Fatalf("last skill = %v %v", s, ok)
		}
		at := t0.Add(time.Minute)
		_ = p.RecordOutcomes(ctx, "cl:eu/s0", []time.Time{at}, []Outcome{{At: at, Wait: 1500 * time.Millisecond, Kind: OutcomeMatched}, {At: at, Wait: time.Second, Kind: OutcomeTimeout}})
		outs, ms, err := p.Stats(ctx, "cl:eu")
		if err != nil || len(outs) != 2 || outs[0].Kind != OutcomeTimeout || outs[1].Wait != 1500*time.Millisecond || len(ms) != 1 {
			t.Fatalf("stats = %+v %v %v", outs, ms, err)
		}
	})

	// No real time passes: a pool that let Redis's expiry decide would
	// keep the lease held at T+5s and renew it at T+4s.
	t.Run("LeasesByTheCallersClock", func(t *testing.T) {
		p := newPool(t)
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		tok, err := p.AcquireLease(ctx, "ct:eu", "m1", at(0), 4*time.Second, 0)
		if err != nil || tok <= 0 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		if other, _ := p.AcquireLease(ctx, "ct:eu", "m2", at(3*time.Second), 4*time.Second, 0); other != 0 {
			t.Fatalf("acquired at T+3s a lease held until T+4s: %d", other)
		}
		if ok, _ := p.RenewLease(ctx, "ct:eu", "m1", tok, at(3999*time.Millisecond), 4*time.Second); !ok {
			t.Fatal("renew just before the expiry refused")
		}
		// Renewed at T+3.999s: held until T+7.999s.
		if other, _ := p.AcquireLease(ctx, "ct:eu", "m2", at(5*time.Second), 4*time.Second, 0); other != 0 {
			t.Fatalf("acquired at T+5s a lease renewed until T+8s: %d", other)
		}
		if ok, _ := p.RenewLease(ctx, "ct:eu", "m1", tok, at(8*time.Second), 4*time.Second); ok {
			t.Fatal("renewed at its expiry")
		}
		tok2, err := p.AcquireLease(ctx, "ct:eu", "m2", at(9*time.Second), 4*time.Second, tok-1)
		if err != nil || tok2 != tok+1 {
			t.Fatalf("take over at T+9s = %d, %v; want %d", tok2, err, tok+1)
		}
		if ok, _ := p.RenewLease(ctx, "ct:eu", "m1", tok, at(5*time.Second), 4*time.Second); ok {
			t.Fatal("the previous owner renewed after the takeover, on a clock behind")
		}
		if ok, _ := p.ReleaseLease(ctx, "ct:eu", "m1", tok); ok {
			t.Fatal("the previous owner released the new lease")
		}
		// A release reads no clock, and frees the lease at once.
		if ok, _ := p.ReleaseLease(ctx, "ct:eu", "m2", tok2); !ok {
			t.Fatal("release refused")
		}
		if tok3, _ := p.AcquireLease(ctx, "ct:eu", "m3", at(9*time.Second), time.Second, 0); tok3 != tok2+1 {
			t.Fatalf("acquire after a release = %d, want %d", tok3, tok2+1)
		}
		if _, err := p.AcquireLease(ctx, "ct:eu", "m1", time.Time{}, time.Second, 0); err == nil {
			t.Fatal("acquire at the zero time accepted")
		}
	})

	// The pool's clock, not Redis's, ends ticket hashes and claims' marks:
	// no real time passes, and Redis keeps every key throughout.
	t.Run("HashesAndMarksEndByThePoolsClock", func(t *testing.T) {
		now := t0
		p := newPoolAt(t, func() time.Time { return now }, 5*time.Second)
		part := []string{"ch:eu"}
		a := entry("a", 1, 0, time.Hour)
		enq(t, p, "ch:eu", a)
		if r, err := p.Claim(ctx, "ch:eu", 0, "m", []matcher.Entry{a}); err != nil || !r.OK {
			t.Fatalf("claim = %+v, %v", r, err)
		}
		now = t0.Add(4999 * time.Millisecond)
		if added, _ := p.Enqueue(ctx, "ch:eu", a, hashTTL, hbTimeout); added {
			t.Fatal("enqueued over a claim's mark that lasts")
		}
		if r, _ := p.RemoveEntry(ctx, part, a); r.Removed || r.ClaimedBy != "m" {
			t.Fatalf("cancel while the mark lasts = %+v", r)
		}
		now = t0.Add(5 * time.Second)
		if ok, _ := p.Heartbeat(ctx, "ch:eu", "a", now, hbTimeout); ok {
			t.Fatal("heartbeat of a claimed ticket")
		}
		if added, err := p.Enqueue(ctx, "ch:eu", a, hashTTL, hbTimeout); err != nil || !added {
			t.Fatalf("enqueue once the mark ended = %v, %v", added, err)
		}
		if r, _ := p.RemoveEntry(ctx, part, a); !r.Removed {
			t.Fatalf("cancel of the ticket enqueued again = %+v", r)
		}
		b := entry("b", 1, 0, time.Hour)
		if r, _ := p.Claim(ctx, "ch:eu", 0, "m", []matcher.Entry{b}); r.OK {
			t.Fatal("claimed a ticket never enqueued")
		}
		enq(t, p, "ch:eu", b)
		if _, err := p.Claim(ctx, "ch:eu", 0, "mb", []matcher.Entry{b}); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(10 * time.Second)
		if r, _ := p.RemoveEntry(ctx, part, b); r.Removed || r.ClaimedBy != "" {
			t.Fatalf("cancel once the mark ended = %+v, want neither", r)
		}

		// A waiting ticket's hash ends at now + its TTL.
		c := entry("c", 2, 0, time.Hour)
		if added, err := p.Enqueue(ctx, "ch:eu", c, time.Minute, hbTimeout); err != nil || !added {
			t.Fatalf("enqueue c = %v, %v", added, err)
		}
		now = t0.Add(69 * time.Second)
		if ok, _ := p.Heartbeat(ctx, "ch:eu", "c", t0.Add(20*time.Second), hbTimeout); !ok {
			t.Fatal("heartbeat of a waiting ticket refused")
		}
		if _, e, found, _ := p.Locate(ctx, part, "c"); !found || e.UserID != "u-c" {
			t.Fatalf("locate c = %+v, %v", e, found)
		}
		watch := WatchScan(t0.Add(time.Hour), 5)
		if got, _ := p.ScanMany(ctx, "ch:eu", []Scan{watch}); len(got[0]) != 1 || got[0][0].UserID != "u-c" || !got[0][0].Heartbeat.Equal(t0.Add(20*time.Second)) {
			t.Fatalf("watched before the hash ended = %+v", got)
		}
		now = t0.Add(70 * time.Second)
		if ok, _ := p.Heartbeat(ctx, "ch:eu", "c", t0.Add(21*time.Second), hbTimeout); ok {
			t.Fatal("heartbeat after the hash ended")
		}
		if _, _, found, _ := p.Locate(ctx, part, "c"); found {
			t.Fatal("located a ticket whose hash ended")
		}
		// Its member is still in the pool: read as a bare id, to restore.
		if got, _ := p.ScanMany(ctx, "ch:eu", []Scan{watch}); len(got[0]) != 1 || got[0][0].TicketID != "c" || got[0][0].UserID != "" {
			t.Fatalf("watched after the hash ended = %+v", got)
		}
		if added, _ := p.Enqueue(ctx, "ch:eu", c, time.Minute, hbTimeout); !added {
			t.Fatal("enqueue over a hash that ended was a no-op")
		}

		// The reconciler leaves a live claim to its owner while its mark
		// lasts, and puts it back once the mark ended.
		d := entry("d", 3, 0, time.Hour)
		enq(t, p, "ch:eu", d)
		tok, _ := p.AcquireLease(ctx, "ch:eu", "m1", now, time.Hour, 0)
		if r, err := p.Claim(ctx, "ch:eu", tok, "md", []matcher.Entry{d}); err != nil || !r.OK {
			t.Fatalf("claim d = %+v, %v", r, err)
		}
		now = now.Add(4 * time.Second)
		if n, _ := p.RequeueMissing(ctx, "ch:eu", nil, []matcher.Entry{d}, hashTTL, now, hbTimeout); n != 0 {
			t.Fatalf("requeued a live claim: %d", n)
		}
		now = now.Add(time.Second)
		if n, err := p.RequeueMissing(ctx, "ch:eu", nil, []matcher.Entry{d}, hashTTL, now, hbTimeout); err != nil || n != 1 {
			t.Fatalf("requeue once the claim's mark ended = %d, %v", n, err)
		}
	})

	t.Run("RacingClaimAndCancel", func(t *testing.T) {
		p := newPool(t)
		claims, cancels := 0, 0
		for i := range 200 {
			part := "cx:eu"
			e := entry("t"+string(rune('a'+i%26))+string(rune('a'+i/26)), float64(i), 0, time.Minute)
			enq(t, p, part, e)
			var wg sync.WaitGroup
			var claimed, removed bool
			wg.Add(2)
			go func() { defer wg.Done(); r, _ := p.Claim(ctx, part, 0, "m", []matcher.Entry{e}); claimed = r.OK }()
			go func() { defer wg.Done(); r, _ := p.RemoveEntry(ctx, []string{part}, e); removed = r.Removed }()
			wg.Wait()
			if claimed == removed {
				t.Fatalf("round %d: claimed %v, removed %v: want exactly one", i, claimed, removed)
			}
			if claimed {
				claims++
			} else {
				cancels++
			}
		}
		t.Logf("claims %d, cancels %d", claims, cancels)
	})
}
