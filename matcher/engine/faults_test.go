package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// poolsHolding lists the pools of the harness's (queue, global) that hold
// ticket id.
func poolsHolding(h *harness, id string) []string {
	var in []string
	for _, p := range h.q.Pools("global") {
		if h.inPool(p.String(), id) {
			in = append(in, p.String())
		}
	}
	return in
}

// leases plays the owners of pools: each pool's lease held by one owner
// at a time, its token recorded as the pool's epoch, as the Runner does.
type leases struct {
	h      *harness
	led    matcher.Ledger
	mu     sync.Mutex
	tokens map[string]int64
	owners map[string]string
	n      int
}

func newLeases(h *harness) *leases {
	return &leases{h: h, led: h.led, tokens: map[string]int64{}, owners: map[string]string{}}
}

// token is the pool's current fencing token, 0 before its first owner.
func (l *leases) token(part string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens[part]
}

// takeOver gives the pool to a new owner: the old one's lease ends (it
// died, or lost it), and its claims are dead from then on.
func (l *leases) takeOver(t *testing.T, part string) int64 {
	t.Helper()
	ctx := context.Background()
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.owners[part]; old != "" {
		if _, err := l.h.pool.ReleaseLease(ctx, part, old, l.tokens[part]); err != nil {
			t.Error(err)
		}
	}
	l.n++
	owner := fmt.Sprint("owner-", l.n)
	tok, err := l.h.pool.AcquireLease(ctx, part, owner, l.h.clock(), time.Minute, l.tokens[part])
	if err != nil || tok == 0 {
		t.Errorf("acquire %s: %d, %v", part, tok, err)
		return 0
	}
	if err := l.led.SetLeaseEpoch(ctx, part, tok); err != nil {
		t.Error(err)
	}
	l.tokens[part], l.owners[part] = tok, owner
	return tok
}

// claimAs claims tickets from part under the fence token tok, as an owner
// whose commit never comes.
func claimAs(t *testing.T, h *harness, part string, tok int64, matchID string, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var es []matcher.Entry
	for _, e := range h.entries(part) {
		if want[e.TicketID] {
			es = append(es, e)
		}
	}
	res, err := h.pool.Claim(context.Background(), part, tok, matchID, es)
	if err != nil || !res.OK || len(es) != len(ids) {
		t.Fatalf("claim %v from %s = %+v, %v", ids, part, res, err)
	}
}

// A sub-pool's owner died between its claim and its commit: the takeover
// reconcile puts the claimed tickets back at once (not once the claim's
// 30 s marker expires), and passes resolve them, one by its deadline. A
// ticket promoted to the overflow pool, and one claimed there by a live
// owner, are left where they are: no ticket is ever in two pools.
func TestShardedTakeoverReconcileReturnsDeadClaims(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := newHarnessWith(t, shardedQueue(), rdb, prefix, ledger.NewMemory())
		ctx := context.Background()
		s1, ov := "hot:global/s1", "hot:global/ov"
		// c and e wait long enough to be promoted.
		c := h.join(userIn(&h.q, "c", "s1"), 500)
		e := h.join(userIn(&h.q, "e", "s1"), 900)
		h.advance(20 * time.Second)
		if res := h.tickIn(s1); res.Promoted != 2 {
			t.Fatalf("s1 pass = %+v, want c and e promoted", res)
		}
		a := h.join(userIn(&h.q, "a", "s1"), 100)
		b := h.join(userIn(&h.q, "b", "s1"), 101)
		d := h.join(userIn(&h.q, "d", "s1"), 300)
		f := h.join(userIn(&h.q, "f", "s1"), 700)
		ls := newLeases(h)
		claimAs(t, h, s1, ls.takeOver(t, s1), "dead-owner", a.ID, b.ID, d.ID)
		// The overflow pool's live owner has c claimed, its commit to come.
		claimAs(t, h, ov, ls.takeOver(t, ov), "live-overflow", c.ID)
		// s1's owner dies; its successor claims f, its commit to come.
		claimAs(t, h, s1, ls.takeOver(t, s1), "live-s1", f.ID)

		res, err := lease.ReconcileQueue(ctx, h.led, h.pool, &h.q, matcher.Partition{Queue: "hot", Region: "global", Shard: "s1"}, h.clock())
		if err != nil || res.Added != 3 {
			t.Fatalf("takeover reconcile = %+v, %v; want the 3 tickets of the dead claim back", res, err)
		}
		for _, tk := range []matcher.Ticket{a, b, d} {
			if in := poolsHolding(h, tk.ID); len(in) != 1 || in[0] != s1 {
				t.Fatalf("ticket %s of the dead claim is in %v, want %s", tk.ID, in, s1)
			}
		}
		if in := poolsHolding(h, e.ID); len(in) != 1 || in[0] != ov {
			t.Fatalf("promoted ticket e is in %v, want %s alone", in, ov)
		}
		if in := poolsHolding(h, c.ID); len(in) != 0 {
			t.Fatalf("ticket c, claimed in the overflow pool, is in %v", in)
		}
		if in := poolsHolding(h, f.ID); len(in) != 0 {
			t.Fatalf("ticket f, claimed by s1's live owner, is in %v", in)
		}
		// The overflow owner's commit fails: c goes back where it was.
		entry := matcher.EntryOf(h.ticket(c.ID))
		if _, err := h.pool.Requeue(ctx, ov, []matcher.Entry{entry}, time.Hour, time.Time{}, h.q.HeartbeatTimeout); err != nil {
			t.Fatal(err)
		}
		if in := poolsHolding(h, c.ID); len(in) != 1 || in[0] != ov {
			t.Fatalf("ticket c is in %v, want %s alone", in, ov)
		}

		if res := h.tickIn(s1); res.Matches != 1 {
			t.Fatalf("s1 pass after the reconcile = %+v, want a and b matched", res)
		}
		want := sortedUsers(matcher.Match{Players: []matcher.Player{{UserID: a.UserID}, {UserID: b.UserID}}})
		if got := h.seated(a.ID); !slices.Equal(got, want) {
			t.Fatalf("a seated with %v, want %v", got, want)
		}
		h.advance(h.ticket(d.ID).Deadline.Sub(h.clock()))
		if res := h.tickIn(s1); res.Matches+res.Expired != 1 {
			t.Fatalf("pass at d's deadline = %+v, want d resolved", res)
		}
		if s := h.ticket(d.ID).Status; s == matcher.StatusWaiting {
			t.Fatalf("ticket d still WAITING at its deadline")
		}
	})
}

// The same for an unsharded queue reconciled as the Runner does it (with
// its queue's configuration).
func TestTakeoverReconcileReturnsDeadClaims(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}, rdb, prefix, ledger.NewMemory())
		ctx := context.Background()
		a := h.join("a", 100)
		b := h.join("b", 101)
		ls := newLeases(h)
		claimAs(t, h, "q:global", ls.takeOver(t, "q:global"), "dead-owner", a.ID, b.ID)
		ls.takeOver(t, "q:global")
		res, err := lease.ReconcileQueue(ctx, h.led, h.pool, &h.q, matcher.Partition{Queue: "q", Region: "global"}, h.clock())
		if err != nil || res.Added != 2 {
			t.Fatalf("takeover reconcile = %+v, %v; want the 2 tickets of the dead claim back", res, err)
		}
		if res := h.tick(); res.Matches != 1 {
			t.Fatalf("pass after the reconcile = %+v, want a and b matched", res)
		}
		if s := h.ticket(b.ID).Status; s != matcher.StatusMatched {
			t.Fatalf("b is %s", s)
		}
	})
}

// The sub-pools' reconcilers put dead claims back while every engine of a
// sharded queue passes (promoting, claiming, committing): at the end,
// after a last reconcile, every WAITING ticket is in exactly one pool and
// every resolved one in none.
func TestShardedReconcileUnderConcurrentPasses(t *testing.T) {
	q := shardedQueue()
	q.OverflowAfter = time.Second
	q.Window = &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 2}, {After: 2 * time.Second, Width: 40}}}
	h := newHarness(t, q)
	ctx := context.Background()
	var subs []matcher.Partition
	for _, p := range h.q.Pools("global") {
		if p.Shard != matcher.OverflowShard {
			subs = append(subs, p)
		}
	}
	reconcileAll := func() int {
		n := 0
		for _, p := range subs {
			res, err := lease.ReconcileQueue(ctx, h.led, h.pool, &h.q, p, h.clock())
			if err != nil {
				t.Errorf("reconcile %s: %v", p, err)
			}
			n += res.Added
		}
		return n
	}
	// Every sub-pool has an owner whose engine claims and commits with its
	// token; the overflow engine runs unfenced.
	ls := newLeases(h)
	engines := map[string]*engine.Engine{}
	for part, e := range h.pools {
		if part == "hot:global/ov" {
			engines[part] = e
			continue
		}
		ls.takeOver(t, part)
		fe, err := engine.NewEngine(engine.EngineConfig{
			Deps:   engine.Deps{Pool: h.pool, Ledger: h.led, Presence: h.seen, Now: h.clock},
			Queue:  h.q,
			Region: "global",
			Shard:  e.Partition().Shard,
			Fence:  func() int64 { return ls.token(part) },
		})
		if err != nil {
			t.Fatal(err)
		}
		engines[part] = fe
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for part, e := range engines {
		wg.Go(func() {
			for !stop.Load() {
				// A pass of a deposed owner fails: fine.
				if _, err := e.Tick(ctx); err != nil && !errors.Is(err, pool.ErrStaleFence) && !errors.Is(err, matcher.ErrStaleEpoch) {
					t.Errorf("tick %s: %v", part, err)
					return
				}
			}
		})
	}
	var added atomic.Int64
	wg.Go(func() {
		for !stop.Load() {
			added.Add(int64(reconcileAll()))
		}
	})
	rng := rand.New(rand.NewPCG(3, 3))
	dead := 0
	for i := range 300 {
		h.join(fmt.Sprint("p", i), float64(rng.IntN(300)))
		if i%3 == 0 {
			h.advance(50 * time.Millisecond)
		}
		if i%10 == 9 {
			// An owner claims two of a sub-pool's players and dies; the
			// next owner takes over.
			part := subs[rng.IntN(len(subs))].String()
			if es := h.entries(part); len(es) >= 2 {
				if res, err := h.pool.Claim(ctx, part, ls.token(part), fmt.Sprint("dead-", i), es[:2]); err == nil && res.OK {
					dead++
				}
			}
			ls.takeOver(t, part)
		}
	}
	for range 20 {
		h.advance(500 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	added.Add(int64(reconcileAll()))
	t.Logf("%d dead claims, %d tickets put back by the reconcilers", dead, added.Load())
	if dead == 0 || added.Load() == 0 {
		t.Fatal("no dead claim was made and put back")
	}
	for i := range 300 {
		user := fmt.Sprint("p", i)
		st, err := h.led.UserState(ctx, user, time.Time{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range st.Tickets {
			in := poolsHolding(h, tk.ID)
			if tk.Status == matcher.StatusWaiting && len(in) != 1 {
				t.Fatalf("waiting ticket %s is in %v", tk.ID, in)
			}
			if tk.Status != matcher.StatusWaiting && len(in) != 0 {
				t.Fatalf("%s ticket %s is in %v", tk.Status, tk.ID, in)
			}
		}
	}
}

// End to end: a sub-pool's owner claimed a player and stopped before its
// commit. The next owner's takeover reconcile puts the player back at once,
// and a pass resolves the ticket at its deadline, long before the claim's
// 30 s marker would have expired.
func TestTakeoverResolvesADeadClaimByItsDeadline(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := shardedQueue()
		q.Deadline = 2 * time.Second
		cfg := matcher.Config{Queues: []matcher.QueueConfig{q}}
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		led := ledger.NewMemory()
		pl := pool.New(rdb, prefix)
		svc, err := engine.NewService(engine.ServiceConfig{Deps: engine.Deps{Pool: pl, Ledger: led}, Queues: cfg})
		if err != nil {
			t.Fatal(err)
		}
		start := func(owner string) (*lease.Runner, func()) {
			r, err := lease.NewRunner(lease.RunnerConfig{
				Deps:     engine.Deps{Pool: pl, Ledger: led},
				Queues:   cfg,
				Redis:    rdb,
				Prefix:   prefix,
				Owner:    owner,
				LeaseTTL: time.Minute,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = r.Run(ctx); close(done) }()
			for i := 0; len(r.Held()) < 5; i++ {
				if i == 1000 {
					t.Fatalf("%s holds %v", owner, r.Held())
				}
				time.Sleep(10 * time.Millisecond)
			}
			return r, func() { cancel(); <-done }
		}
		_, stopA := start("a")
		ctx := context.Background()
		qc := &cfg.Queues[0]
		user := userIn(qc, "x", "s1")
		skill := 100.0
		tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: user, Queue: "hot", Region: "global", Skill: &skill})
		if err != nil {
			t.Fatal(err)
		}
		// a's engine claims the player under its token; a stops before
		// the commit (its lease released, as a crash's would expire).
		s1 := "hot:global/s1"
		lease, err := rdb.Get(ctx, pl.LeaseKey(s1)).Result()
		if err != nil {
			t.Fatal(err)
		}
		var owner string
		var tok int64
		if _, err := fmt.Sscanf(lease, "%s %d", &owner, &tok); err != nil || owner != "a" {
			t.Fatalf("lease %q: %v", lease, err)
		}
		es, err := pl.Oldest(ctx, s1, 10)
		if err != nil || len(es) != 1 {
			t.Fatalf("s1 holds %v, %v", es, err)
		}
		if res, err := pl.Claim(ctx, s1, tok, "never-committed", es); err != nil || !res.OK {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		stopA()
		_, stopB := start("b")
		defer stopB()
		for i := 0; ; i++ {
			got, err := led.Ticket(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != matcher.StatusWaiting {
				t.Logf("resolved %s, %s after its deadline", got.Status, time.Since(tk.Deadline).Round(time.Millisecond))
				break
			}
			if i == 1500 { // 15 s: half the claim's TTL
				t.Fatal("the dead claim's ticket was not resolved by its deadline")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
