package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// After a wipe of Redis every WAITING ticket is back after one sweep, with
// its original enqueue time and deadline; entries with no WAITING record are
// removed.
func TestReconcileBothWays(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 4}}, rdb, prefix, ledger.NewMemory())
		ctx := context.Background()
		var joined []matcher.Ticket
		for i := range 20 {
			h.advance(time.Second)
			joined = append(joined, h.join(fmt.Sprint("u", i), float64(i)))
		}
		// A record-only cancel leaves a stray pool entry.
		if _, _, err := h.led.Resolve(ctx, joined[3].ID, matcher.StatusCancelled, matcher.ReasonUser, h.clock()); err != nil {
			t.Fatal(err)
		}
		part := matcher.Partition{Queue: "q", Region: "global"}
		res, err := lease.Reconcile(ctx, h.led, h.pool, part, h.clock())
		if err != nil || res.Added != 0 || res.Removed != 1 {
			t.Fatalf("reconcile = %+v, %v; want 1 removed", res, err)
		}
		if err := redistest.DeletePrefix(ctx, rdb, prefix); err != nil { // the wipe
			t.Fatal(err)
		}
		if d := h.depth(); d != 0 {
			t.Fatalf("depth after wipe %d", d)
		}
		res, err = lease.Reconcile(ctx, h.led, h.pool, part, h.clock())
		if err != nil || res.Added != 19 || res.Removed != 0 {
			t.Fatalf("reconcile after wipe = %+v, %v; want 19 added", res, err)
		}
		olds, err := h.pool.Oldest(ctx, part.String(), 100)
		if err != nil || len(olds) != 19 {
			t.Fatalf("oldest: %d %v", len(olds), err)
		}
		for i, e := range olds {
			want := joined[i]
			if i >= 3 {
				want = joined[i+1]
			}
			if e.TicketID != want.ID || !e.Enqueue.Equal(want.EnqueuedAt) || !e.Deadline.Equal(want.Deadline) || e.Skill != want.Skill {
				t.Fatalf("entry %d = %+v, want %s enq %v dl %v", i, e, want.ID, want.EnqueuedAt, want.Deadline)
			}
		}
		// And the deadline still holds: at the deadline they are resolved.
		h.advance(5 * time.Minute)
		h.tick()
		for _, tk := range joined {
			if s := h.ticket(tk.ID).Status; s == matcher.StatusWaiting {
				t.Fatalf("ticket %s still waiting after its deadline", tk.ID)
			}
		}
	})
}

// staller is a Ledger whose commits first let the test steal the lease:
// the commit of the old owner then meets the new epoch.
type staller struct {
	matcher.Ledger
	before func()
}

func (s *staller) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	if s.before != nil {
		s.before()
	}
	return s.Ledger.CommitMatches(ctx, ms, epoch)
}

// A lease stolen between the claim and the commit: the old owner's commit is
// refused by the record's epoch, nothing is matched, and the players are back
// in the pool with their original scores for the new owner.
func TestLeaseStolenMidClaim(t *testing.T) {
	rdb := redistest.Mini(t)
	ctx := context.Background()
	mem := ledger.NewMemory()
	st := &staller{Ledger: mem}
	h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}, rdb, "mg", st)
	part := "q:global"
	tokA, _ := h.pool.AcquireLease(ctx, part, "a", h.clock(), time.Minute, 0)
	if err := mem.SetLeaseEpoch(ctx, part, tokA); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.NewEngine(engine.EngineConfig{
		Deps:   engine.Deps{Pool: h.pool, Ledger: st, Presence: h.seen, Now: h.clock},
		Queue:  h.q,
		Region: "global",
		Fence:  func() int64 { return tokA },
	})
	if err != nil {
		t.Fatal(err)
	}
	a := h.join("a", 50)
	b := h.join("b", 50)
	st.before = func() {
		st.before = nil
		// The lease expires and b takes over while a's claim is in flight.
		_, _ = h.pool.ReleaseLease(ctx, part, "a", tokA)
		tokB, _ := h.pool.AcquireLease(ctx, part, "b", h.clock(), time.Minute, tokA)
		if err := mem.SetLeaseEpoch(ctx, part, tokB); err != nil {
			t.Error(err)
		}
	}
	res, err := eng.Tick(ctx)
	if !errors.Is(err, matcher.ErrStaleEpoch) || res.Matches != 0 {
		t.Fatalf("tick of the stale owner = %+v, %v; want ErrStaleEpoch and no match", res, err)
	}
	for _, tk := range []matcher.Ticket{a, b} {
		if s := h.ticket(tk.ID).Status; s != matcher.StatusWaiting {
			t.Fatalf("ticket %s is %s", tk.ID, s)
		}
	}
	olds, _ := h.pool.Oldest(ctx, part, 10)
	if len(olds) != 2 {
		t.Fatalf("players not back in the pool: %+v", olds)
	}
	// The stale owner's next pass is refused before anything is touched.
	if _, err := eng.Tick(ctx); !errors.Is(err, pool.ErrStaleFence) {
		t.Fatalf("next tick of the stale owner: %v, want ErrStaleFence", err)
	}
}

// runners starts n Runners over the same partitions with a short lease TTL.
type runnerSet struct {
	t       *testing.T
	runners []*lease.Runner
	cancels []context.CancelFunc
	clients []*redis.Client
	done    []chan struct{}
}

func startRunners(t *testing.T, n int, q matcher.QueueConfig, ttl time.Duration) *runnerSet {
	t.Helper()
	base := redistest.Real(t)
	prefix := redistest.Prefix(t)
	led := ledger.NewMemory()
	cfg := matcher.Config{Queues: []matcher.QueueConfig{q}}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	rs := &runnerSet{t: t}
	for i := range n {
		// Each runner has its own client, so a crash can cut one off.
		rdb := redis.NewClient(base.Options())
		r, err := lease.NewRunner(lease.RunnerConfig{
			Deps:     engine.Deps{Pool: pool.New(rdb, prefix), Ledger: led},
			Queues:   cfg,
			Redis:    rdb,
			Prefix:   prefix,
			Owner:    fmt.Sprint("m", i),
			LeaseTTL: ttl,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = r.Run(ctx); close(done) }()
		rs.runners, rs.cancels, rs.clients, rs.done = append(rs.runners, r), append(rs.cancels, cancel), append(rs.clients, rdb), append(rs.done, done)
	}
	t.Cleanup(func() {
		for i := range rs.runners {
			rs.cancels[i]()
			<-rs.done[i]
			rs.clients[i].Close()
		}
	})
	return rs
}

// crash stops runner i without releasing anything, as kill -9 would.
func (rs *runnerSet) crash(i int) {
	rs.clients[i].Close() // its releases now fail
	rs.cancels[i]()
	<-rs.done[i]
}

// holdings waits until the partitions are held as want says (by counts per
// live runner) and returns who holds what.
func (rs *runnerSet) waitHeld(live []int, total int, within time.Duration) [][]string {
	rs.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var held [][]string
		all := map[string]int{}
		fair := true
		for _, i := range live {
			h := rs.runners[i].Held()
			held = append(held, h)
			for _, p := range h {
				all[p]++
			}
			share := (total + len(live) - 1) / len(live)
			if len(h) > share {
				fair = false
			}
		}
		for p, n := range all {
			if n > 1 {
				rs.t.Fatalf("partition %s held by %d runners at once: %v", p, n, held)
			}
		}
		if len(all) == total && fair {
			return held
		}
		if time.Now().After(deadline) {
			rs.t.Fatalf("after %s: held %v, want all %d partitions shared fairly", within, held, total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunnersShareAndTakeOver(t *testing.T) {
	q := matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, RegionRules: matcher.RegionRules{Regions: []string{"a", "b", "c", "d", "e", "f"}}}
	ttl := 600 * time.Millisecond
	rs := startRunners(t, 3, q, ttl)
	held := rs.waitHeld([]int{0, 1, 2}, 6, 5*time.Second)
	for _, h := range held {
		if len(h) != 2 {
			t.Fatalf("unfair share: %v", held)
		}
	}
	start := time.Now()
	rs.crash(1)
	rs.waitHeld([]int{0, 2}, 6, 4*ttl)
	took := time.Since(start)
	t.Logf("takeover of a crashed runner's partitions took %s (lease TTL %s)", took, ttl)
	if took > 2*ttl {
		t.Errorf("takeover took %s, more than two lease TTLs", took)
	}
	// A graceful stop releases at once: the survivor takes over well inside
	// a TTL.
	start = time.Now()
	rs.cancels[2]()
	<-rs.done[2]
	rs.waitHeld([]int{0}, 6, 4*ttl)
	t.Logf("takeover after a graceful stop took %s", time.Since(start))
}

// failingCommits is a ledger whose batch commits fail, writing nothing,
// while fail is set; with wipe set too, Redis loses every key first.
type failingCommits struct {
	matcher.Ledger
	rdb        redis.UniversalClient
	fail, wipe atomic.Bool
}

func (f *failingCommits) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	if !f.fail.Load() {
		return f.Ledger.CommitMatches(ctx, ms, epoch)
	}
	if f.wipe.Load() {
		if err := f.rdb.FlushAll(ctx).Err(); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("the record is unreachable")
}

// A group put back after its commit failed keeps its heartbeat, unless
// Redis lost its keys meanwhile: the players' presence records went with
// them (until the gateways next refresh them), and the group has a full
// heartbeat timeout from then instead of being evicted at the next pass.
func TestRequeueAfterRedisLossGivesAFullHeartbeatTimeout(t *testing.T) {
	for _, tc := range []struct {
		name            string
		wipe            bool
		ghosts, matches int
	}{
		{"RedisLost", true, 0, 1},
		{"RedisKept", false, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redistest.Mini(t)
			led := &failingCommits{Ledger: ledger.NewMemory(), rdb: rdb}
			h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{HeartbeatTimeout: 5 * time.Second}},
				rdb, "mg", led)
			h.join("ann", 1500)
			h.join("bob", 1500)
			// No sign of life since they joined.
			h.seen.leave("ann", t0)
			h.seen.leave("bob", t0)
			h.advance(4 * time.Second)
			led.fail.Store(true)
			led.wipe.Store(tc.wipe)
			if _, err := h.engines["global"].Tick(context.Background()); err == nil {
				t.Fatal("a pass whose commit failed reported no error")
			}
			led.fail.Store(false)
			if got := h.depth(); got != 2 {
				t.Fatalf("%d players back in the pool after the failed commit, want 2", got)
			}
			h.advance(2 * time.Second) // 6s after they joined, 2s after the requeue
			if res := h.tick(); res.Ghosts != tc.ghosts || res.Matches != tc.matches {
				t.Fatalf("pass after the requeue: %+v; want %d ghosts, %d matches", res, tc.ghosts, tc.matches)
			}
		})
	}
}

// bareMembers rewrites the pool entries of tickets as the layout before
// members carried the entries' fields wrote them: each set names the ticket
// by its bare id, and its hash holds no member.
func bareMembers(t *testing.T, h *harness, rdb redis.UniversalClient, part string, tickets ...matcher.Ticket) {
	t.Helper()
	ctx := context.Background()
	for _, set := range []string{"pool", "enq", "watch"} {
		key := h.pool.Key(part, set)
		zs, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, z := range zs {
			m := z.Member.(string)
			for _, tk := range tickets {
				if strings.HasPrefix(m, tk.ID+"|") {
					if err := rdb.ZRem(ctx, key, m).Err(); err != nil {
						t.Fatal(err)
					}
					if err := rdb.ZAdd(ctx, key, redis.Z{Score: z.Score, Member: tk.ID}).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	for _, tk := range tickets {
		if err := rdb.HDel(ctx, h.pool.Key(part, "t:"+tk.ID), "m").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// Entries written by the earlier layout (bare ticket ids) are rewritten
// from the record as the matcher meets them at the head, or removed when
// the record no longer has them waiting, and are matched after that; the
// reconciler rewrites them too.
func TestBareMembersAreRestoredFromTheRecord(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, part := pairsHarness(t, rdb, prefix)
		ctx := context.Background()
		// The pair can only be matched together; the third is far from
		// both and leaves without the pool knowing.
		a := h.join("ua", 10)
		h.advance(time.Second)
		b := h.join("ub", 12)
		h.advance(time.Second)
		gone := h.join("uc", 900)
		if _, _, err := h.led.Resolve(ctx, gone.ID, matcher.StatusCancelled, matcher.ReasonUser, h.clock()); err != nil {
			t.Fatal(err)
		}
		bareMembers(t, h, rdb, part, a, b, gone)

		h.tick() // restores what it meets, matches nothing with it
		es, err := h.pool.Members(ctx, part)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]matcher.Entry{}
		for _, e := range es {
			got[e.TicketID] = e
		}
		if len(got) != 2 || got[a.ID].UserID != "ua" || got[b.ID].UserID != "ub" {
			t.Fatalf("after a pass the pool holds %+v, want a and b with their fields", es)
		}
		h.tick()
		if s := h.ticket(a.ID).Status; s != matcher.StatusMatched || h.ticket(a.ID).MatchID != h.ticket(b.ID).MatchID {
			t.Fatalf("a is %s, want matched with b", s)
		}

		// The reconciler rewrites a waiting one it finds bare.
		d := h.join("ud", 2000)
		bareMembers(t, h, rdb, part, d)
		res, err := lease.Reconcile(ctx, h.led, h.pool, matcher.Partition{Queue: "q", Region: "global"}, h.clock())
		if err != nil || res.Added != 1 {
			t.Fatalf("reconcile = %+v, %v; want 1 added", res, err)
		}
		if es, err := h.pool.Members(ctx, part); err != nil || len(es) != 1 || es[0].UserID != "ud" {
			t.Fatalf("after reconcile the pool holds %+v, %v; want d with its fields", es, err)
		}
	})
}

// A cancel removes the pool entry the join wrote even when its ticket hash
// is gone (a partial loss of Redis): the record's ticket names the member.
func TestCancelRemovesTheEntryWithoutItsHash(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, part := pairsHarness(t, rdb, prefix)
		ctx := context.Background()
		a, _ := joinWithoutHash(t, h, rdb, part, "ua")
		if _, err := h.svc.Cancel(ctx, "ua", a.ID); err != nil {
			t.Fatal(err)
		}
		if d := h.depth(); d != 0 {
			t.Fatalf("pool depth %d after the cancel, want 0", d)
		}
		for _, set := range []string{"enq", "watch"} {
			if n := rdb.ZCard(ctx, h.pool.Key(part, set)).Val(); n != 0 {
				t.Fatalf("%s holds %d after the cancel, want 0", set, n)
			}
		}
	})
}

// A pool member missing from the watch set, as the layout before it (its
// due and hb sets) left every waiting ticket, is never looked at by its
// deadline: the reconciler puts it back into watch and drops the old sets.
func TestReconcilerWatchesWhatTheLayoutBeforeLeft(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, part := pairsHarness(t, rdb, prefix)
		ctx := context.Background()
		a := h.join("ua", 10)
		watch := h.pool.Key(part, "watch")
		ms, err := rdb.ZRange(ctx, watch, 0, -1).Result()
		if err != nil || len(ms) != 1 || !strings.HasPrefix(ms[0], a.ID+"|") {
			t.Fatalf("watch holds %q, %v; want the ticket's member", ms, err)
		}
		if err := rdb.ZRem(ctx, watch, ms[0]).Err(); err != nil {
			t.Fatal(err)
		}
		for _, set := range []string{"due", "hb"} {
			if err := rdb.ZAdd(ctx, h.pool.Key(part, set), redis.Z{Score: 1, Member: a.ID}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		h.advance(6 * time.Minute) // past the deadline
		if res := h.tick(); res.Expired != 0 || h.ticket(a.ID).Status != matcher.StatusWaiting {
			t.Fatalf("pass before the sweep: %+v, ticket %s; want it unseen", res, h.ticket(a.ID).Status)
		}
		res, err := lease.Reconcile(ctx, h.led, h.pool, matcher.Partition{Queue: "q", Region: "global"}, h.clock())
		if err != nil || res.Watched != 1 || res.Added != 0 || res.Removed != 0 {
			t.Fatalf("reconcile = %+v, %v; want 1 watched", res, err)
		}
		if n := rdb.Exists(ctx, h.pool.Key(part, "due"), h.pool.Key(part, "hb")).Val(); n != 0 {
			t.Fatalf("%d of the old sets left", n)
		}
		if res := h.tick(); res.Expired != 1 || h.ticket(a.ID).Status != matcher.StatusExpired {
			t.Fatalf("pass after the sweep: %+v, ticket %s; want it expired", res, h.ticket(a.ID).Status)
		}
	})
}

// A silent ticket whose hash is gone reads from the watch set as its bare
// id: the pass restores it from the record then, rather than read past it
// every pass until its deadline.
func TestSilentTicketWithoutItsHashIsRestored(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, part := pairsHarness(t, rdb, prefix)
		ctx := context.Background()
		a, key := joinWithoutHash(t, h, rdb, part, "ua")
		h.advance(time.Minute) // silent past the heartbeat timeout
		h.tick()
		if m := rdb.HGet(ctx, key, "m").Val(); !strings.HasPrefix(m, a.ID+"|") {
			t.Fatalf("hash names %q after the pass, want the ticket's member", m)
		}
		if s := h.ticket(a.ID).Status; s != matcher.StatusWaiting {
			t.Fatalf("ticket is %s, want still waiting", s)
		}
	})
}

// pairsHarness is a harness of a pairs queue "q" on the memory ledger, and
// its partition's name.
func pairsHarness(t *testing.T, rdb redis.UniversalClient, prefix string) (*harness, string) {
	h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}, rdb, prefix, ledger.NewMemory())
	return h, matcher.Partition{Queue: "q", Region: "global"}.String()
}

// joinWithoutHash joins user and deletes the ticket's hash, as a partial
// loss of Redis would; it returns the ticket and the hash's key.
func joinWithoutHash(t *testing.T, h *harness, rdb redis.UniversalClient, part, user string) (matcher.Ticket, string) {
	t.Helper()
	tk := h.join(user, 10)
	key := h.pool.Key(part, "t:"+tk.ID)
	if err := rdb.Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	return tk, key
}
