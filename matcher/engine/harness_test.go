package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
	"github.com/matchgate/matchgate/provider"
)

// harness wires a Service and the engines of one queue to miniredis and the
// memory ledger, on a clock the test moves.
type harness struct {
	t       *testing.T
	mu      sync.Mutex
	now     time.Time
	q       matcher.QueueConfig
	led     matcher.Ledger
	pool    *pool.Pool
	svc     *engine.Service
	engines map[string]*engine.Engine
	// pools holds the engine of every pool by partition name, sub-pools
	// of a sharded queue included.
	pools  map[string]*engine.Engine
	pushed *recorder
	seen   *presenceFake
	opts   harnessOptions
}

// harnessOptions are the extras a scenario may wire in.
type harnessOptions struct {
	alloc        engine.Allocator
	skill        engine.SkillSource
	skillTimeout time.Duration
	sleeps       *[]time.Duration // allocation backoff waits, recorded instead of slept
	providers    provider.Live
	assignments  provider.Record
}

type harnessOption func(*harnessOptions)

func withAllocator(a engine.Allocator) harnessOption {
	return func(o *harnessOptions) { o.alloc = a }
}

func withSkill(s engine.SkillSource, timeout time.Duration) harnessOption {
	return func(o *harnessOptions) { o.skill, o.skillTimeout = s, timeout }
}

func withProviders(live provider.Live, rec provider.Record) harnessOption {
	return func(o *harnessOptions) { o.providers, o.assignments = live, rec }
}

func withSleeps(rec *[]time.Duration) harnessOption {
	return func(o *harnessOptions) { o.sleeps = rec }
}

// presenceFake says every user is online except those marked away, who were
// last seen at the time they left.
type presenceFake struct {
	h    *harness
	mu   sync.Mutex
	away map[string]time.Time
}

func (p *presenceFake) leave(user string, at time.Time) {
	p.mu.Lock()
	p.away[user] = at
	p.mu.Unlock()
}

func (p *presenceFake) back(user string) {
	p.mu.Lock()
	delete(p.away, user)
	p.mu.Unlock()
}

func (p *presenceFake) LastSeen(_ context.Context, users []string) (map[string]time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Time{}
	for _, u := range users {
		if at, ok := p.away[u]; ok {
			out[u] = at
		} else {
			out[u] = p.h.clock()
		}
	}
	return out, nil
}

// recorder is a Notifier that keeps every delivered event.
type recorder struct {
	mu     sync.Mutex
	events []matcher.Event
}

func (r *recorder) Deliver(_ context.Context, events []matcher.Event) {
	r.mu.Lock()
	r.events = append(r.events, events...)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

var t0 = time.UnixMilli(1755530400000).UTC()

func newHarness(t *testing.T, q matcher.QueueConfig, opts ...harnessOption) *harness {
	t.Helper()
	return newHarnessWith(t, q, redistest.Mini(t), "mg", ledger.NewMemory(), opts...)
}

func newHarnessWith(t *testing.T, q matcher.QueueConfig, rdb redis.UniversalClient, prefix string, led matcher.Ledger, opts ...harnessOption) *harness {
	t.Helper()
	cfg := matcher.Config{Queues: []matcher.QueueConfig{q}}
	if err := cfg.Normalize(); err != nil {
		t.Fatalf("config: %v", err)
	}
	h := &harness{t: t, now: t0, q: cfg.Queues[0], led: led, pool: pool.New(rdb, prefix),
		engines: map[string]*engine.Engine{}, pools: map[string]*engine.Engine{}, pushed: &recorder{}}
	for _, o := range opts {
		o(&h.opts)
	}
	h.seen = &presenceFake{h: h, away: map[string]time.Time{}}
	svc, err := engine.NewService(engine.ServiceConfig{
		Deps: engine.Deps{Pool: h.pool, Ledger: h.led, Notifier: h.pushed, Now: h.clock, Allocator: h.opts.alloc,
			Providers: h.opts.providers, Assignments: h.opts.assignments},
		Queues:       cfg,
		Skill:        h.opts.skill,
		SkillTimeout: h.opts.skillTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	for _, r := range h.q.Regions {
		for _, p := range h.q.Pools(r) {
			e := h.newPoolEngine(r, p.Shard)
			h.pools[p.String()] = e
			if p.Shard == "" {
				h.engines[r] = e
			}
		}
	}
	return h
}

func (h *harness) newEngine(region string) *engine.Engine {
	h.t.Helper()
	return h.newPoolEngine(region, "")
}

func (h *harness) newPoolEngine(region, shard string) *engine.Engine {
	h.t.Helper()
	cfg := engine.EngineConfig{
		Deps: engine.Deps{Pool: h.pool, Ledger: h.led, Notifier: h.pushed, Presence: h.seen, Now: h.clock, Allocator: h.opts.alloc,
			Providers: h.opts.providers, Assignments: h.opts.assignments},
		Queue:  h.q,
		Region: region,
		Shard:  shard,
		// A commit whose outcome is unknown is tried again without the
		// default's real waits.
		CommitRetry: []time.Duration{time.Millisecond, time.Millisecond},
	}
	if rec := h.opts.sleeps; rec != nil {
		var mu sync.Mutex
		cfg.Sleep = func(_ context.Context, d time.Duration) error {
			mu.Lock()
			*rec = append(*rec, d)
			mu.Unlock()
			return nil
		}
	}
	e, err := engine.NewEngine(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

func (h *harness) join(user string, skill float64) matcher.Ticket {
	h.t.Helper()
	t, err := h.svc.Join(context.Background(), matcher.JoinRequest{UserID: user, Queue: h.q.Name, Region: h.q.Regions[0], Skill: &skill})
	if err != nil {
		h.t.Fatalf("join %s: %v", user, err)
	}
	return t
}

func (h *harness) tick() engine.TickResult {
	h.t.Helper()
	res, err := h.engines[h.q.Regions[0]].Tick(context.Background())
	if err != nil {
		h.t.Fatalf("tick: %v", err)
	}
	return res
}

func (h *harness) ticket(id string) matcher.Ticket {
	h.t.Helper()
	t, err := h.led.Ticket(context.Background(), id)
	if err != nil {
		h.t.Fatalf("ticket %s: %v", id, err)
	}
	return t
}

func (h *harness) match(id string) matcher.Match {
	h.t.Helper()
	m, err := h.led.Match(context.Background(), id)
	if err != nil {
		h.t.Fatalf("match %s: %v", id, err)
	}
	return m
}

// users returns the users seated in the match of ticket id, sorted.
func (h *harness) seated(id string) []string {
	h.t.Helper()
	t := h.ticket(id)
	if t.Status != matcher.StatusMatched {
		h.t.Fatalf("ticket %s of %s is %s, want MATCHED", id, t.UserID, t.Status)
	}
	m := h.match(t.MatchID)
	return sortedUsers(m)
}

func sortedUsers(m matcher.Match) []string {
	us := m.UserIDs()
	for i := range us {
		for j := i + 1; j < len(us); j++ {
			if us[j] < us[i] {
				us[i], us[j] = us[j], us[i]
			}
		}
	}
	return us
}

func (h *harness) depth() int64 {
	h.t.Helper()
	n, err := h.pool.Size(context.Background(), matcher.Partition{Queue: h.q.Name, Region: h.q.Regions[0]}.String())
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}
