package clock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/clock"
	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/presence"
)

// world is one deployment: a Redis, a record, and the way each process gets
// its clock from the local clock skewed by some amount.
type world struct {
	rdb    redis.UniversalClient
	prefix string
	led    matcher.Ledger
	pool   *pool.Pool
	// clockOf is the clock of a process whose local clock is off by skew.
	clockOf func(t *testing.T, skew time.Duration) func() time.Time
	// auth is the authority (the Redis server's TIME, as a process with a
	// true clock estimates it): the test's referee.
	auth func() time.Time
}

// synced is the server's wiring: every process synchronizes with Redis TIME.
func synced(rdb redis.UniversalClient) func(t *testing.T, skew time.Duration) func() time.Time {
	return func(t *testing.T, skew time.Duration) func() time.Time {
		c := clock.New(clock.Config{Source: clock.RedisTime(rdb), Skew: skew})
		if err := c.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c.Now
	}
}

// direct is the wiring the server had before: each process's own clock.
func direct(redis.UniversalClient) func(t *testing.T, skew time.Duration) func() time.Time {
	return func(_ *testing.T, skew time.Duration) func() time.Time {
		return func() time.Time { return time.Now().Add(skew) }
	}
}

func (w *world) until(at time.Time) {
	for d := at.Sub(w.auth()); d > 0; d = at.Sub(w.auth()) {
		time.Sleep(min(d, 20*time.Millisecond))
	}
}

func normalized(t *testing.T, q matcher.QueueConfig) (matcher.Config, matcher.QueueConfig) {
	t.Helper()
	cfg := matcher.Config{Queues: []matcher.QueueConfig{q}}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	return cfg, cfg.Queues[0]
}

func (w *world) service(t *testing.T, cfg matcher.Config, now func() time.Time) *engine.Service {
	t.Helper()
	svc, err := engine.NewService(engine.ServiceConfig{Deps: engine.Deps{Pool: w.pool, Ledger: w.led, Now: now}, Queues: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (w *world) engine(t *testing.T, q matcher.QueueConfig, region string, seen engine.Presence, now func() time.Time) *engine.Engine {
	t.Helper()
	cfg := engine.EngineConfig{Deps: engine.Deps{Pool: w.pool, Ledger: w.led, Now: now}, Queue: q, Region: region}
	if seen != nil {
		cfg.Presence = seen
	}
	e, err := engine.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func join(svc *engine.Service, q matcher.QueueConfig, region, user string, skill float64) (matcher.Ticket, error) {
	return svc.Join(context.Background(), matcher.JoinRequest{UserID: user, Queue: q.Name, Region: region, Skill: &skill})
}

// acceptBeforeWindow: an engine 5 s behind forms a match with a 3 s accept
// window; players accept through a gateway 5 s ahead, 2 s before acceptBy
// as the authority tells it. The accepts count and the match is READY.
func acceptBeforeWindow(t *testing.T, w *world) error {
	cfg, q := normalized(t, matcher.QueueConfig{
		Name:        "arena",
		Seats:       matcher.Seats{Players: 2},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		AcceptRules: matcher.AcceptRules{AcceptWindow: 3 * time.Second},
	})
	region := q.Regions[0]
	svc := w.service(t, cfg, w.clockOf(t, 5*time.Second))
	eng := w.engine(t, q, region, nil, w.clockOf(t, -5*time.Second))
	for _, u := range []string{"ann", "bob"} {
		if _, err := join(svc, q, region, u, 100); err != nil {
			t.Fatal(err)
		}
	}
	res, err := eng.Tick(context.Background())
	if err != nil || res.Matches != 1 {
		t.Fatalf("tick: %d matches, %v", res.Matches, err)
	}
	pending, err := w.led.Pending(context.Background(), matcher.Partition{Queue: q.Name, Region: region})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending matches: %d, %v", len(pending), err)
	}
	m := pending[0]
	w.until(m.AcceptBy.Add(-2 * time.Second))
	for _, u := range []string{"ann", "bob"} {
		if m, err = svc.Accept(context.Background(), u, m.ID); err != nil {
			return fmt.Errorf("accept by %s 2 s before acceptBy refused: %w", u, err)
		}
	}
	if m.State != matcher.MatchReady {
		return fmt.Errorf("match %s after both accepted", m.State)
	}
	return nil
}

// deadlineOnTime: tickets joined through gateways 5 s ahead and 5 s behind
// (one per region, so they cannot be matched together) expire at the
// authority's deadline, judged by engines on true clocks: not at a second
// before, and by half a second after.
func deadlineOnTime(t *testing.T, w *world) error {
	cfg, q := normalized(t, matcher.QueueConfig{
		Name:        "lone",
		Seats:       matcher.Seats{Players: 2},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		Timing:      matcher.Timing{Deadline: 2 * time.Second},
		RegionRules: matcher.RegionRules{Regions: []string{"eu", "us"}},
	})
	skews := map[string]time.Duration{"eu": 5 * time.Second, "us": -5 * time.Second}
	tickets := map[string]matcher.Ticket{}
	engines := map[string]*engine.Engine{}
	joined := w.auth()
	for region, skew := range skews {
		tk, err := join(w.service(t, cfg, w.clockOf(t, skew)), q, region, "p-"+region, 100)
		if err != nil {
			t.Fatal(err)
		}
		tickets[region] = tk
		engines[region] = w.engine(t, q, region, nil, w.clockOf(t, 0))
	}
	status := func(region string) matcher.TicketStatus {
		if _, err := engines[region].Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		tk, err := w.led.Ticket(context.Background(), tickets[region].ID)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Status
	}
	// The authority's deadline: 2 s after the joins (which take a moment).
	due := joined.Add(q.Deadline)
	var errs []error
	w.until(due.Add(-time.Second))
	for region := range skews {
		if s := status(region); s != matcher.StatusWaiting {
			errs = append(errs, fmt.Errorf("%s (gateway %v): %s a second before its deadline", region, skews[region], s))
		}
	}
	w.until(due.Add(500 * time.Millisecond))
	for region := range skews {
		if s := status(region); s != matcher.StatusExpired {
			errs = append(errs, fmt.Errorf("%s (gateway %v): %s half a second after its deadline", region, skews[region], s))
		}
	}
	return errors.Join(errs...)
}

// ghostSeenLately: a player whose last socket closed on a gateway 5 s
// behind a second before the check is not a ghost to an engine on a true
// clock, though their heartbeat is older than the timeout.
func ghostSeenLately(t *testing.T, w *world) error {
	cfg, q := normalized(t, matcher.QueueConfig{
		Name:       "ghosts",
		Seats:      matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 100}}}},
		Timing:     matcher.Timing{HeartbeatTimeout: 2 * time.Second},
	})
	region := q.Regions[0]
	gwClock := w.clockOf(t, -5*time.Second)
	gwSeen := presence.New(presence.Config{Redis: w.rdb, Prefix: w.prefix, Node: "gw-behind", Now: gwClock})
	engSeen := presence.New(presence.Config{Redis: w.rdb, Prefix: w.prefix, Node: "matcher", Now: w.clockOf(t, 0)})
	svc := w.service(t, cfg, gwClock)
	eng := w.engine(t, q, region, engSeen, w.clockOf(t, 0))
	ctx := context.Background()
	if err := gwSeen.Connected(ctx, "gus"); err != nil {
		t.Fatal(err)
	}
	tk, err := join(svc, q, region, "gus", 100)
	if err != nil {
		t.Fatal(err)
	}
	joined := w.auth()
	w.until(joined.Add(1500 * time.Millisecond))
	gwSeen.Disconnected("gus")
	w.until(joined.Add(2500 * time.Millisecond))
	if _, err := eng.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := w.led.Ticket(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != matcher.StatusWaiting {
		return fmt.Errorf("a player seen a second ago on a gateway 5 s behind: ticket %s (%s)", got.Status, got.CancelReason)
	}
	return nil
}

// Processes whose local clocks are 5 s apart either way agree on every
// outcome once each takes its time from the Redis server's TIME — and did
// not while each used its own clock (the second half checks that these
// scenarios tell the two wirings apart).
func TestSkewedProcessesAgree(t *testing.T) {
	scenarios := map[string]func(*testing.T, *world) error{
		"accept 2s before acceptBy":           acceptBeforeWindow,
		"deadline at the authority's":         deadlineOnTime,
		"ghost check of a player seen 1s ago": ghostSeenLately,
	}
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		newLedger := func(*testing.T) matcher.Ledger { return ledger.NewMemory() }
		if t.Name() == "TestSkewedProcessesAgree/redis" {
			newLedger = func(t *testing.T) matcher.Ledger { return ledger.NewPostgres(pgtest.New(t)) }
		}
		auth := synced(rdb)(t, 0)
		for wiring, clocks := range map[string]func(redis.UniversalClient) func(*testing.T, time.Duration) func() time.Time{
			"synced": synced, "own clocks": direct,
		} {
			t.Run(wiring, func(t *testing.T) {
				for name, run := range scenarios {
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						p := fmt.Sprintf("%s:%s:%s", prefix, wiring, name)
						w := &world{rdb: rdb, prefix: p, led: newLedger(t), pool: pool.New(rdb, p), clockOf: clocks(rdb), auth: auth}
						err := run(t, w)
						switch {
						case wiring == "synced" && err != nil:
							t.Error(err)
						case wiring != "synced" && err == nil:
							t.Error("processes on their own skewed clocks agreed: the scenario does not test the clock")
						case err != nil:
							t.Logf("on their own clocks, as expected: %v", err)
						}
					})
				}
			})
		}
	})
}
