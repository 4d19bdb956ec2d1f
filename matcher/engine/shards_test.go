package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

func shardedQueue() matcher.QueueConfig {
	return matcher.QueueConfig{
		Name:       "hot",
		Seats:      matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 5}}}},
		Sharding:   matcher.Sharding{Shards: 4, OverflowAfter: 20 * time.Second},
	}
}

// userIn finds a user name that hashes to the sub-pool shard.
func userIn(q *matcher.QueueConfig, prefix, shard string) string {
	for i := 0; ; i++ {
		u := fmt.Sprint(prefix, i)
		if q.PoolOf(u, "global").Shard == shard {
			return u
		}
	}
}

// Two players alone in their sub-pools are promoted, with their places, to
// the overflow pool once they have waited overflowAfter, and matched there.
func TestShardedPromotion(t *testing.T) {
	h := newHarness(t, shardedQueue())
	ctx := context.Background()
	if len(h.pools) != 5 {
		t.Fatalf("engines for %v, want 4 sub-pools and the overflow pool", h.pools)
	}
	u1, u2 := userIn(&h.q, "a", "s1"), userIn(&h.q, "b", "s3")
	a := h.join(u1, 100)
	h.advance(time.Second)
	b := h.join(u2, 101)
	if !h.inPool("hot:global/s1", a.ID) || !h.inPool("hot:global/s3", b.ID) {
		t.Fatal("joins did not land in their sub-pools")
	}
	for _, p := range []string{"hot:global/s1", "hot:global/s3", "hot:global/ov"} {
		if res := h.tickIn(p); res.Matches != 0 {
			t.Fatalf("matched across sub-pools in %s", p)
		}
	}
	h.advance(19 * time.Second) // a has waited 20 s, b 19 s
	if res := h.tickIn("hot:global/s1"); res.Promoted != 1 {
		t.Fatalf("s1 pass = %+v, want a promoted", res)
	}
	if res := h.tickIn("hot:global/s3"); res.Promoted != 0 {
		t.Fatal("b promoted before waiting overflowAfter")
	}
	if v, _ := h.svc.Ticket(ctx, u1, a.ID); v.Explain == nil || !v.Explain.Overflow {
		t.Fatalf("explain of a promoted ticket: %+v", v.Explain)
	}
	es := h.entries("hot:global/ov")
	if len(es) != 1 || es[0].TicketID != a.ID || !es[0].Enqueue.Equal(a.EnqueuedAt) || !es[0].Deadline.Equal(a.Deadline) {
		t.Fatalf("overflow pool %+v: original scores lost", es)
	}
	// A cancel and a heartbeat find a promoted ticket.
	if err := h.svc.Heartbeat(ctx, u1, a.ID); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	h.tickIn("hot:global/s3")
	if res := h.tickIn("hot:global/ov"); res.Matches != 1 {
		t.Fatalf("overflow pass formed %d", res.Matches)
	}
	if got := h.seated(a.ID); !slices.Equal(got, sortedUsers(matcher.Match{Players: []matcher.Player{{UserID: u1}, {UserID: u2}}})) {
		t.Fatalf("matched %v", got)
	}
	qs, _ := h.svc.Queues(ctx)
	if qs[0].Depth["global"] != 0 {
		t.Fatalf("depth %v", qs[0].Depth)
	}
	c := h.join(userIn(&h.q, "c", "s2"), 7)
	h.advance(20 * time.Second)
	h.tickIn("hot:global/s2")
	if _, err := h.svc.Cancel(ctx, c.UserID, c.ID); err != nil {
		t.Fatal(err)
	}
	for _, p := range h.q.Pools("global") {
		if h.inPool(p.String(), c.ID) {
			t.Fatalf("cancelled ticket still in %s", p)
		}
	}
}

// Sub-pool promotion under concurrent claims: the four sub-pool engines and
// the overflow engine pass concurrently while players join, wait, get
// promoted and cancel. At every end, each ticket is in exactly one place:
// one pool while WAITING, no pool once resolved, one match when MATCHED.
func TestShardedPromotionUnderConcurrentClaims(t *testing.T) {
	q := shardedQueue()
	q.OverflowAfter = 2 * time.Second
	q.Window = &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 3}, {After: 3 * time.Second, Width: 50}}}
	h := newHarness(t, q)
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for part, e := range h.pools {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := e.Tick(ctx); err != nil {
					t.Errorf("tick %s: %v", part, err)
					return
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var tickets []matcher.Ticket
	for i := range 400 {
		tickets = append(tickets, h.join(fmt.Sprint("p", i), float64(rng.IntN(200))))
		if i%3 == 0 {
			h.advance(100 * time.Millisecond)
		}
		if i%7 == 0 && i > 0 {
			tk := tickets[rng.IntN(len(tickets))]
			_, _ = h.svc.Cancel(ctx, tk.UserID, tk.ID) // may lose to a claim: fine
		}
	}
	// Let everyone be promoted and drained.
	for range 40 {
		h.advance(time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, p := range h.q.Pools("global") {
			n += len(h.entries(p.String()))
		}
		if n <= 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	promoted := 0
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		var in []string
		for _, p := range h.q.Pools("global") {
			if h.inPool(p.String(), tk.ID) {
				in = append(in, p.String())
			}
		}
		switch got.Status {
		case matcher.StatusWaiting:
			if len(in) != 1 {
				t.Fatalf("waiting ticket %s is in %v", tk.ID, in)
			}
		case matcher.StatusMatched:
			m := h.match(got.MatchID)
			if len(in) != 0 || !slices.Contains(m.TicketIDs(), tk.ID) {
				t.Fatalf("matched ticket %s in pools %v, match %v", tk.ID, in, m.TicketIDs())
			}
		default:
			if len(in) != 0 {
				t.Fatalf("%s ticket %s is in %v", got.Status, tk.ID, in)
			}
		}
	}
	// Some were matched in the overflow pool: players of different
	// sub-pools in one match.
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		if got.Status != matcher.StatusMatched {
			continue
		}
		m := h.match(got.MatchID)
		if h.q.PoolOf(m.Players[0].UserID, "global") != h.q.PoolOf(m.Players[1].UserID, "global") {
			promoted++
		}
	}
	if promoted == 0 {
		t.Fatal("no match across sub-pools: the overflow pool never matched")
	}
	t.Logf("%d matched tickets were seated with a player of another sub-pool", promoted)
}

// A Runner leases and runs every sub-pool of a sharded queue separately.
func TestRunnerLeasesSubPools(t *testing.T) {
	rs := startRunners(t, 2, matcher.QueueConfig{Name: "hot", Seats: matcher.Seats{Players: 2}, Sharding: matcher.Sharding{Shards: 3}}, 600*time.Millisecond)
	held := rs.waitHeld([]int{0, 1}, 4, 5*time.Second)
	all := append(slices.Clone(held[0]), held[1]...)
	slices.Sort(all)
	if want := []string{"hot:global/ov", "hot:global/s0", "hot:global/s1", "hot:global/s2"}; !slices.Equal(all, want) {
		t.Fatalf("held %v, want %v", all, want)
	}
}
