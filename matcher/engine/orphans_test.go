package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/lease"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// backend is a Redis and a ledger: the embedded pair, and the real one.
type backend struct {
	name   string
	rdb    redis.UniversalClient
	prefix string
	led    matcher.Ledger
}

func backends(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, backend{name: "embedded", rdb: redistest.Mini(t), prefix: "mg", led: ledger.NewMemory()})
	})
	t.Run("redis+postgres", func(t *testing.T) {
		fn(t, backend{name: "real", rdb: redistest.Real(t), prefix: redistest.Prefix(t), led: ledger.NewPostgres(pgtest.New(t))})
	})
}

func normalized(t *testing.T, qs ...matcher.QueueConfig) matcher.Config {
	t.Helper()
	c := matcher.Config{Queues: qs}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	return c
}

// startRunner runs a Runner of c until the test ends.
func startRunner(t *testing.T, b backend, c matcher.Config, clock func() time.Time) *lease.Runner {
	t.Helper()
	r, err := lease.NewRunner(lease.RunnerConfig{
		Deps:           engine.Deps{Pool: pool.New(b.rdb, b.prefix), Ledger: b.led, Now: clock},
		Queues:         c,
		Redis:          b.rdb,
		Prefix:         b.prefix,
		Owner:          "m0",
		LeaseTTL:       time.Second,
		ReconcileEvery: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func newService(t *testing.T, b backend, c matcher.Config, clock func() time.Time) *engine.Service {
	t.Helper()
	svc, err := engine.NewService(engine.ServiceConfig{Deps: engine.Deps{Pool: pool.New(b.rdb, b.prefix), Ledger: b.led, Now: clock}, Queues: c})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// eventually polls cond until it holds, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// A queue retired across a restart leaves its waiting tickets and pending
// matches with no engine. The Runner serves them as an orphan: the pending
// match is dissolved when its window passes, the tickets expire at their
// deadline (not before), and their players can join another queue.
func TestRetiredQueueIsResolvedAfterRestart(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		duel := matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Deadline: time.Minute}}
		old := matcher.QueueConfig{Name: "old", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Deadline: time.Minute}, AcceptRules: matcher.AcceptRules{AcceptWindow: 10 * time.Second}}
		before := normalized(t, duel, old)
		svc := newService(t, b, before, clock.Now)
		skill := 0.0
		var waiting []matcher.Ticket
		for i := range 3 {
			skill += 1000 // too far apart to be matched
			tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: fmt.Sprint("w", i), Queue: "old", Skill: &skill})
			if err != nil {
				t.Fatal(err)
			}
			waiting = append(waiting, tk)
		}
		// A pending match of the old queue, committed as its engine would.
		var seats []matcher.Ticket
		for _, u := range []string{"p0", "p1"} {
			tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: u, Queue: "old", Skill: &skill})
			if err != nil {
				t.Fatal(err)
			}
			seats = append(seats, tk)
		}
		by := t0.Add(10 * time.Second)
		m := matcher.Match{ID: "7f000000-0000-4000-8000-000000000001", Queue: "old", Region: "global", State: matcher.MatchPendingAccept,
			FormedBy: matcher.FormedFilled, CreatedAt: t0, AcceptBy: &by, Version: 1}
		for _, tk := range seats {
			m.Players = append(m.Players, matcher.Player{TicketID: tk.ID, UserID: tk.UserID, Skill: tk.Skill})
		}
		if rs, err := b.led.CommitMatches(ctx, []matcher.Match{m}, 0); err != nil || rs[0].Err != nil {
			t.Fatalf("commit: %v %+v", err, rs)
		}
		if _, _, err := b.led.Accept(ctx, m.ID, "p1", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}

		// The restart: "old" is gone from the configuration.
		after := normalized(t, duel)
		r := startRunner(t, b, after, clock.Now)
		svc = newService(t, b, after, clock.Now)
		eventually(t, "the orphan leased", func() bool { return slices.Contains(r.Held(), "old:global") })
		p := pool.New(b.rdb, b.prefix)
		// The sweep empties the pool nobody serves, but resolves nothing
		// before its time.
		eventually(t, "the orphan's pool emptied", func() bool { n, _ := p.Size(ctx, "old:global"); return n == 0 })
		for _, tk := range waiting {
			if got, _ := b.led.Ticket(ctx, tk.ID); got.Status != matcher.StatusWaiting {
				t.Fatalf("ticket %s is %s before its deadline", tk.ID, got.Status)
			}
		}
		if _, err := svc.Join(ctx, matcher.JoinRequest{UserID: "w0", Queue: "duel", Skill: &skill}); matcher.ErrorCode(err) != matcher.CodeAlreadyQueued {
			t.Fatalf("join before the deadline: %v, want ALREADY_QUEUED", err)
		}

		// The accept window passes: p0 (silent) is cancelled, p1 goes back
		// to waiting.
		clock.set(by)
		eventually(t, "the pending match dissolved", func() bool {
			got, _ := b.led.Match(ctx, m.ID)
			return got.State == matcher.MatchDissolved
		})
		if got, _ := b.led.Ticket(ctx, seats[0].ID); got.Status != matcher.StatusCancelled || got.CancelReason != matcher.ReasonAcceptTimeout {
			t.Fatalf("silent player's ticket = %s %s", got.Status, got.CancelReason)
		}
		// The deadline passes: every ticket expires.
		clock.set(t0.Add(time.Minute))
		for _, tk := range append(waiting, seats[1]) {
			eventually(t, "ticket "+tk.ID+" expired", func() bool {
				got, _ := b.led.Ticket(ctx, tk.ID)
				return got.Status == matcher.StatusExpired
			})
		}
		for _, u := range []string{"w0", "w1", "w2", "p0", "p1"} {
			if _, err := svc.Join(ctx, matcher.JoinRequest{UserID: u, Queue: "duel", Skill: &skill}); err != nil {
				t.Fatalf("join of %s after the orphan resolved: %v", u, err)
			}
		}
		// Nothing live is left there: the orphan is given up.
		eventually(t, "the orphan released", func() bool { return !slices.Contains(r.Held(), "old:global") })
	})
}

// SetQueues retiring a queue keeps its engine, which resolves its tickets
// by their deadline; its players can then join another queue.
func TestRetiredQueueBySetQueuesExpiresAtTheDeadline(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		duel := matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Deadline: time.Minute}}
		// No ghost check before the deadline: the test sends no heartbeat.
		old := matcher.QueueConfig{Name: "old", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Deadline: time.Minute, HeartbeatTimeout: time.Hour}}
		before := normalized(t, duel, old)
		r := startRunner(t, b, before, clock.Now)
		svc := newService(t, b, before, clock.Now)
		eventually(t, "both held", func() bool { return len(r.Held()) == 2 })
		skill := 10.0
		tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: "ann", Queue: "old", Skill: &skill})
		if err != nil {
			t.Fatal(err)
		}
		after := normalized(t, duel)
		if err := r.SetQueues(after); err != nil {
			t.Fatal(err)
		}
		svc.SetQueues(after)
		clock.set(t0.Add(time.Minute))
		eventually(t, "the ticket expired", func() bool {
			got, _ := b.led.Ticket(ctx, tk.ID)
			return got.Status == matcher.StatusExpired
		})
		if _, err := svc.Join(ctx, matcher.JoinRequest{UserID: "ann", Queue: "duel", Skill: &skill}); err != nil {
			t.Fatal(err)
		}
	})
}

// A changed shards count, across a restart or by SetQueues: every waiting
// ticket ends in the pool its user hashes to now, and the pools that no
// longer exist are empty.
func TestShardsChangeRehomesTickets(t *testing.T) {
	for _, c := range []struct {
		from, to int
		live     bool
	}{{4, 2, false}, {1, 3, false}, {3, 1, false}, {4, 2, true}, {1, 3, true}} {
		how := "restart"
		if c.live {
			how = "SetQueues"
		}
		t.Run(fmt.Sprintf("%d→%d by %s", c.from, c.to, how), func(t *testing.T) {
			backends(t, func(t *testing.T, b backend) {
				ctx := context.Background()
				clock := &fakeClock{now: t0}
				q := matcher.QueueConfig{Name: "hot", Seats: matcher.Seats{Players: 2}, Sharding: matcher.Sharding{Shards: c.from}}
				svc := newService(t, b, normalized(t, q), clock.Now)
				var r *lease.Runner
				if c.live {
					r = startRunner(t, b, normalized(t, q), clock.Now)
				}
				var tickets []matcher.Ticket
				for i := range 24 {
					skill := float64(i) * 1000 // too far apart to be matched
					tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: fmt.Sprint("u", i), Queue: "hot", Skill: &skill})
					if err != nil {
						t.Fatal(err)
					}
					tickets = append(tickets, tk)
				}
				q.Shards = c.to
				now := normalized(t, q)
				if c.live {
					if err := r.SetQueues(now); err != nil {
						t.Fatal(err)
					}
				} else {
					startRunner(t, b, now, clock.Now)
				}
				p := pool.New(b.rdb, b.prefix)
				nq := now.Queues[0]
				current := map[string]bool{}
				for _, part := range nq.Pools("global") {
					current[part.String()] = true
				}
				every := normalized(t, matcher.QueueConfig{Name: "hot", Sharding: matcher.Sharding{Shards: 64}})
				// A current pool's reconciler may put a ticket back into its
				// new pool before the rehome has taken it out of the old one:
				// wait for both.
				eventually(t, "every ticket in its new pool and the retired pools empty", func() bool {
					for _, tk := range tickets {
						home := nq.PoolOf(tk.UserID, tk.Region).String()
						if !slices.ContainsFunc(members(ctx, p, home), func(e matcher.Entry) bool { return e.TicketID == tk.ID }) {
							return false
						}
					}
					for _, part := range every.Partitions() {
						if !current[part.String()] {
							if n, _ := p.Size(ctx, part.String()); n != 0 {
								return false
							}
						}
					}
					n, _ := p.Size(ctx, "hot:global")
					return c.to == 1 || n == 0
				})
				for _, tk := range tickets {
					if got, _ := b.led.Ticket(ctx, tk.ID); got.Status != matcher.StatusWaiting {
						t.Fatalf("ticket %s is %s", tk.ID, got.Status)
					}
				}
			})
		})
	}
}

func members(ctx context.Context, p *pool.Pool, part string) []matcher.Entry {
	es, _ := p.Members(ctx, part)
	return es
}

// A region removed across a restart is an orphan too.
func TestRemovedRegionIsResolvedAfterRestart(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		q := matcher.QueueConfig{Name: "duel", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Deadline: time.Minute}, RegionRules: matcher.RegionRules{Regions: []string{"eu", "na"}}}
		svc := newService(t, b, normalized(t, q), clock.Now)
		skill := 10.0
		tk, err := svc.Join(ctx, matcher.JoinRequest{UserID: "nia", Queue: "duel", Region: "na", Skill: &skill})
		if err != nil {
			t.Fatal(err)
		}
		q.Regions = []string{"eu"}
		r := startRunner(t, b, normalized(t, q), clock.Now)
		eventually(t, "the orphan leased", func() bool { return slices.Contains(r.Held(), "duel:na") })
		clock.set(tk.Deadline)
		eventually(t, "the ticket expired", func() bool {
			got, _ := b.led.Ticket(ctx, tk.ID)
			return got.Status == matcher.StatusExpired
		})
		svc = newService(t, b, normalized(t, q), clock.Now)
		if _, err := svc.Join(ctx, matcher.JoinRequest{UserID: "nia", Queue: "duel", Region: "eu", Skill: &skill}); err != nil {
			t.Fatal(err)
		}
	})
}
