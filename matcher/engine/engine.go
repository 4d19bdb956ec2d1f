package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/plan"
	"github.com/matchgate/matchgate/matcher/pool"
)

// Notifier publishes outbox events right after the commit that wrote them, so
// a push never waits for the relay's sweep. It must not block for long; the
// relay delivers whatever it fails to.
type Notifier interface {
	Deliver(ctx context.Context, events []matcher.Event)
}

// EngineConfig configures the loop of one partition.
type EngineConfig struct {
	Queue  matcher.QueueConfig // normalized
	Region string
	// Shard is the sub-pool of a sharded queue this engine owns ("s0"…,
	// or OverflowShard); "" for an unsharded queue.
	Shard string
	Deps
	// AllocateBackoff are the waits between allocation attempts. Default
	// DefaultAllocateBackoff (three attempts, 50 ms and 100 ms apart).
	AllocateBackoff []time.Duration
	// Sleep waits between allocation attempts and between the tries of a
	// commit whose outcome is unknown; nil sleeps for real.
	Sleep func(ctx context.Context, d time.Duration) error
	// PassTimeout bounds a pass of Run up to its commit: its reads, claims
	// and allocations. Default DefaultPassTimeout (15 s).
	PassTimeout time.Duration
	// AllocateTimeout bounds the allocations of one pass together, their
	// attempts and backoff included, inside the pass's budget: a hanging
	// fleet manager costs a pass this much however many matches it formed
	// (those past it go back to the pool at once), not a budget per match
	// nor the whole pass. Default DefaultAllocateTimeout (2 s: the HTTP
	// allocator's call is bounded at 1 s).
	AllocateTimeout time.Duration
	// CommitTimeout bounds each try of a pass's commit, and CleanupTimeout
	// each release of a server and requeue of players. Both run on contexts
	// of their own, whatever became of the pass's, so that a pass cut short
	// still commits, puts back and releases what it claimed and allocated.
	// Defaults DefaultCommitTimeout and DefaultCleanupTimeout (5 s each).
	CommitTimeout  time.Duration
	CleanupTimeout time.Duration
	// CommitRetry are the waits before each new try of a commit that
	// failed as a whole (its outcome unknown: the reply may be all that
	// was lost). Default DefaultCommitRetry (100 ms, 300 ms, 1 s).
	CommitRetry []time.Duration
	// Fence returns the partition's lease fencing token, checked by the claim
	// script and the commit. Nil runs unfenced (token 0): tests and tools.
	// With a Fence, a pass while it returns 0 (the lease is not held, or its
	// validity ran out) does nothing.
	Fence func() int64
}

// Engine forms the matches of one partition. Tick is one pass; Run calls it
// every tick and whenever Wake is called. Ticks never overlap.
type Engine struct {
	cfg   EngineConfig
	q     *matcher.QueueConfig
	plan  plan.Planner
	part  string   // the pool this engine owns: keys, lease, fence
	base  string   // its (queue, region): pending index, statistics
	pools []string // every pool of the (queue, region)
	wake  chan struct{}
	log   *slog.Logger
	// pendingChecked is when (unix ms) a pass last looked for passed accept
	// windows, for queues without an accept window.
	pendingChecked atomic.Int64
	// depth is how many anchors the first round of the next pass tries
	// (see pass.skill); 0 until a pass sets it, and never below AnchorDepth.
	depth atomic.Int32
	// backlog is whether the last pass's last round found a dense head
	// (see choose): more is formable at once.
	backlog atomic.Bool
	// mu guards unsettled: the matches whose commit's outcome is still
	// unknown, asked about again by the next pass's commit (see settle).
	mu        sync.Mutex
	unsettled []staged
	// prefs are a provider queue's requesters' preferences (providers.go).
	prefs prefsCache
	// room is the storage a pass lends its anchors scans (pool.Room), held
	// by one pass at a time and kept between them.
	room atomic.Pointer[pool.Room]
}

// NewEngine validates the configuration; it starts nothing.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Pool == nil || cfg.Ledger == nil {
		return nil, errors.New("engine: Pool and Ledger are required")
	}
	if err := cfg.Queue.Validate(); err != nil {
		return nil, fmt.Errorf("engine: queue %s: %w", cfg.Queue.Name, err)
	}
	if !cfg.Queue.HasRegion(cfg.Region) {
		return nil, fmt.Errorf("engine: queue %s has no region %q", cfg.Queue.Name, cfg.Region)
	}
	p := matcher.Partition{Queue: cfg.Queue.Name, Region: cfg.Region, Shard: cfg.Shard}
	var pools []string
	for _, x := range cfg.Queue.Pools(cfg.Region) {
		pools = append(pools, x.String())
	}
	if !slices.Contains(pools, p.String()) {
		return nil, fmt.Errorf("engine: queue %s has no pool %q", cfg.Queue.Name, p)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.AllocateBackoff == nil {
		cfg.AllocateBackoff = DefaultAllocateBackoff
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	cfg.PassTimeout = cmp.Or(cfg.PassTimeout, DefaultPassTimeout)
	cfg.AllocateTimeout = cmp.Or(cfg.AllocateTimeout, DefaultAllocateTimeout)
	cfg.CommitTimeout = cmp.Or(cfg.CommitTimeout, DefaultCommitTimeout)
	cfg.CleanupTimeout = cmp.Or(cfg.CleanupTimeout, DefaultCleanupTimeout)
	if cfg.CommitRetry == nil {
		cfg.CommitRetry = DefaultCommitRetry
	}
	e := &Engine{cfg: cfg, part: p.String(), base: p.Base().String(), pools: pools, wake: make(chan struct{}, 1)}
	e.q = &e.cfg.Queue
	e.plan = plan.PlannerOf(e.q)
	e.log = cfg.Logger.With("partition", e.part)
	return e, nil
}

// Queue is the configuration the engine matches by.
func (e *Engine) Queue() *matcher.QueueConfig { return e.q }

// Partition returns the partition the engine owns.
func (e *Engine) Partition() matcher.Partition {
	return matcher.Partition{Queue: e.q.Name, Region: e.cfg.Region, Shard: e.cfg.Shard}
}

// pendingDue reports whether this pass looks for accept windows that
// passed: every pass of a queue with an accept window, and every 10 s of one
// without (matches formed under an earlier configuration still close).
func (e *Engine) pendingDue(now time.Time) bool {
	if e.q.AcceptWindow > 0 {
		return true
	}
	last := e.pendingChecked.Load()
	if now.UnixMilli()-last < 10_000 && now.UnixMilli() >= last {
		return false
	}
	return e.pendingChecked.CompareAndSwap(last, now.UnixMilli())
}

// handlesPending reports whether this engine closes the accept windows of
// its (queue, region): the only engine of an unsharded queue, the overflow
// engine of a sharded one.
func (e *Engine) handlesPending() bool {
	return e.cfg.Shard == "" || e.cfg.Shard == matcher.OverflowShard
}

// Wake asks for a pass as soon as the current one ends. It never blocks;
// wakes that arrive during a pass collapse into one.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Presence is the part of the presence tracker the engine reads.
type Presence interface {
	// LastSeen returns, per user, when they last had a live socket (now if
	// they have one); users with no record are absent.
	LastSeen(ctx context.Context, users []string) (map[string]time.Time, error)
}

// The defaults of EngineConfig's budgets. A pass is never cut short by Run's
// context, so that a claim in flight when the engine stops is committed or
// put back; its own budget bounds it instead.
const (
	DefaultPassTimeout     = 15 * time.Second
	DefaultAllocateTimeout = 2 * time.Second
	DefaultCommitTimeout   = 5 * time.Second
	DefaultCleanupTimeout  = 5 * time.Second
)

// DefaultCommitRetry are the waits before the new tries of a commit whose
// outcome is unknown.
var DefaultCommitRetry = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// Run passes every tick and on every wake until ctx ends, a wake's pass no
// sooner than the queue's PassGap after the last pass began unless that
// pass left a backlog. A pass's commit
// runs while the next pass reads and claims (one commit in flight at a
// time, in pass order): the claims already keep the two passes' players
// apart, and the pass no longer waits for PostgreSQL. A pass under way when
// ctx ends is finished, its commit included, before Run returns.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.q.Tick)
	defer t.Stop()
	var (
		mu       sync.Mutex
		lastErr  time.Time
		inflight = make(chan struct{})
	)
	close(inflight)
	defer func() { <-inflight }()
	logErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		// A dependency outage would log every tick; once a second is enough.
		if now := time.Now(); now.Sub(lastErr) > time.Second {
			lastErr = now
			e.log.Warn("matching pass failed", "err", err)
		}
	}
	var began time.Time // the last pass's start
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-e.wake:
			// Joins at 2,000/s woke a pass every 2–3 ms, each with one or
			// two matches and a commit, a publish and the pool's round
			// trips of its own; held back to PassGap, a pass takes the
			// joins of those milliseconds together (docs/CAPACITY.md). A
			// backlog's next pass goes at once.
			if wait := e.q.PassGap - time.Since(began); wait > 0 && !e.Backlog() {
				if sleepCtx(ctx, wait) != nil {
					return nil
				}
			}
		}
		began = time.Now()
		start := began
		passCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.PassTimeout)
		p, err := e.begin(passCtx)
		if err != nil && ctx.Err() == nil {
			logErr(err)
		}
		if p == nil {
			cancel()
			continue
		}
		formed := len(p.staged) // before the commit takes them
		<-inflight              // commits go in pass order, one at a time
		done := make(chan struct{})
		inflight = done
		go func() {
			defer close(done)
			defer cancel()
			if err := p.commit(passCtx); err != nil && ctx.Err() == nil {
				logErr(err)
			}
			e.cfg.Metrics.observeTick(e.q.Name, e.cfg.Region, time.Since(start))
		}()
		if err == nil && formed > 0 {
			// More may be formable (a burst of joins): go again at once.
			e.Wake()
		}
	}
}

// Backlog reports whether the last pass ended on a dense head (see
// choose): the next pass has matches to form at once, and Run does not
// hold it back to the queue's PassGap.
func (e *Engine) Backlog() bool { return e.backlog.Load() }

// TickResult counts what one pass did.
type TickResult struct {
	Matches int
	Expired int
	Ghosts  int
	Players int
	// Dissolved counts matches whose accept window passed this pass.
	Dissolved int
	// AllocationFailures counts groups that found no server and went back.
	AllocationFailures int
	// Promoted counts players moved to the overflow pool; Offered the
	// offers written to adjacent regions.
	Promoted int
	Offered  int
}

// Tick runs one matching pass: accept windows that passed are closed, ghosts
// evicted, deadlines resolved, long waiters of a sub-pool promoted to the
// overflow pool, anchors tried in wait order (with the offers of adjacent
// regions), and this partition's long waiters offered to adjacent regions.
func (e *Engine) Tick(ctx context.Context) (TickResult, error) {
	start := time.Now()
	p, err := e.begin(ctx)
	if p == nil {
		return TickResult{}, err
	}
	defer func() { e.cfg.Metrics.observeTick(e.q.Name, e.cfg.Region, time.Since(start)) }()
	if cerr := p.commit(ctx); err == nil {
		err = cerr
	}
	return p.res, err
}

// begin runs a pass up to its commit. Whatever stopped it, the groups it
// claimed are in the pass, for the caller to commit (or put back): a claim
// is never left to its TTL. It returns no pass when this engine does not
// hold the partition's lease.
func (e *Engine) begin(ctx context.Context) (*pass, error) {
	fence := int64(0)
	if e.cfg.Fence != nil {
		if fence = e.cfg.Fence(); fence == 0 {
			return nil, nil // not the owner (any more)
		}
	}
	p := &pass{e: e, now: e.cfg.Now(), fence: fence, used: map[string]bool{}}
	if p.room = e.room.Swap(nil); p.room == nil {
		p.room = new(pool.Room)
	}
	err := p.steps(ctx)
	// The anchors and candidates read into the room are the steps' alone.
	p.oldest, p.near = nil, nil
	e.room.Store(p.room)
	p.room = nil
	return p, err
}

// steps are the pass up to its commit.
func (p *pass) steps(ctx context.Context) error {
	if p.e.handlesPending() && p.e.pendingDue(p.now) {
		if err := p.closeAcceptWindows(ctx); err != nil {
			return err
		}
	}
	if err := p.readHead(ctx); err != nil {
		return err
	}
	if err := p.ghosts(ctx); err != nil {
		return err
	}
	if err := p.deadlines(ctx); err != nil {
		return err
	}
	if err := p.promote(ctx); err != nil {
		return err
	}
	if p.e.q.Kind == matcher.KindProvider {
		p.expireOffers(ctx)
		return p.assign(ctx)
	}
	if err := p.choose(ctx); err != nil {
		return err
	}
	return p.offer(ctx)
}

// pass is the state of one Tick: the clock reading and the tickets already
// used (formed, expired or found gone) so no later step reconsiders them.
type pass struct {
	e     *Engine
	now   time.Time
	fence int64
	used  map[string]bool
	// allocBy ends the budget of the pass's allocations, set by the first.
	allocBy time.Time
	res     TickResult
	// staged are the groups claimed (and given a server) this pass, waiting
	// for the pass's one commit.
	staged []staged
	// The head of the partition, read at the start of the pass in one round
	// trip: the silent (ghost candidates), the due, and the oldest (anchors),
	// depth of them for a skill queue.
	stale, due, oldest []matcher.Entry
	depth              int
	// near holds the candidates of the anchors last read (the head's, then
	// those read after each round's claims), read with them; nil when the
	// anchors were the whole pool.
	near [][]matcher.Entry
	// capacity is each provider's, as the snapshot of a provider queue's
	// pass read it (providers.go).
	capacity map[string]int
	// room is where the steps' anchors scans write what they read (oldest, near).
	room *pool.Room
}

// watchBatch is how many tickets past their deadline or silent one pass
// takes on.
const watchBatch = 256

// readHead reads what the pass starts from in one round trip.
func (p *pass) readHead(ctx context.Context) error {
	q := p.e.q
	p.depth = max(q.AnchorDepth, int(p.e.depth.Load()))
	oldest := p.scanOf(p.e.plan.Head(q, p.depth))
	head, err := p.e.cfg.Pool.ScanMany(ctx, p.e.part, []pool.Scan{pool.WatchScan(p.now, watchBatch), oldest})
	if err != nil {
		return fmt.Errorf("read the head of the pool: %w", err)
	}
	p.due, p.stale = splitWatched(head[0], p.now, q.HeartbeatTimeout)
	p.oldest = head[1]
	return nil
}

// scanOf is the pool's scan for a planner's read of the oldest; an
// anchors read leaves their candidates in p.near.
func (p *pass) scanOf(r plan.Read) pool.Scan {
	if r.Kind == plan.ReadAnchors {
		return pool.AnchorsScan(r.N, r.Near, &p.near).In(p.room)
	}
	return pool.OldestScan(r.N)
}

// read runs a planner's read of the partition.
func (p *pass) read(ctx context.Context, r plan.Read) ([]matcher.Entry, error) {
	return readPool(ctx, p.e.cfg.Pool, p.e.part, r)
}

// readPool runs a planner's read of one pool outside a pass's head (a
// ticket past its deadline, explain).
func readPool(ctx context.Context, pl Pool, part string, r plan.Read) ([]matcher.Entry, error) {
	switch r.Kind {
	case plan.ReadNearest:
		return pl.Nearest(ctx, part, r.Skill, r.N)
	case plan.ReadBetween:
		return pl.Window(ctx, part, r.Lo, r.Hi, r.N)
	case plan.ReadOldest, plan.ReadAnchors:
		return pl.Oldest(ctx, part, r.N)
	case plan.ReadSize:
		// A planner that needs no waiters to decide (a provider queue's
		// expiry: nobody is seated beside a requester) reads none.
		return nil, nil
	}
	return nil, fmt.Errorf("no read of kind %d", r.Kind)
}

// splitWatched sorts what a watch scan read into the tickets past their
// deadline and those for the ghost check: the silent for timeout, who are
// never matched even when their deadline came first, and any read before
// either (the queue's timeout changed since they were written), which the
// check puts back in their place. A ticket may be in both. An entry read
// without its fields goes with the first, which restore it.
func splitWatched(es []matcher.Entry, now time.Time, timeout time.Duration) (due, stale []matcher.Entry) {
	for _, e := range es {
		past := !e.Deadline.After(now)
		if e.UserID == "" || past {
			due = append(due, e)
		}
		if e.UserID != "" && (!past || now.Sub(e.Heartbeat) >= timeout) {
			stale = append(stale, e)
		}
	}
	return due, stale
}

// staged is a claimed group and the match it is to become.
type staged struct {
	m     matcher.Match
	group []matcher.Entry
	tries int // passes whose commit found its outcome unknown
}

// choose forms the groups the queue's planner picks (plan.go). A skill
// queue's planner tries the oldest waiters as anchors, up to AnchorDepth of
// them, so an outlier at the head never blocks the players behind it. The
// anchors and their candidates are read in one round trip and the groups
// claimed in one more; a group that loses a player to a cancel meanwhile is
// left for the next pass. When every anchor of a full round formed a match
// (a backlog), twice as many more are tried in the same pass (up to
// passSeats players), whose one commit then carries them all. While the
// backlog lasts, the next pass starts where this one left off rather than
// at AnchorDepth again (see firstRound). A room queue's planner fills rooms
// from the oldest in one round.
func (p *pass) choose(ctx context.Context) error {
	q := p.e.q
	anchors := p.oldest
	offered, err := p.offers(ctx)
	if err != nil {
		return err
	}
	depth, dense := q.AnchorDepth, false
	defer func() {
		p.e.depth.Store(int32(depth))
		p.e.backlog.Store(dense)
	}()
	for want := p.depth; ; {
		before := len(p.staged)
		chosen, own, err := p.round(ctx, anchors, offered, len(anchors) < want)
		if err != nil {
			return err
		}
		full, tried := chosen.Full, chosen.Tried
		// A dense head (a full read of anchors, and at least half of the
		// anchors tried found their group): read on, twice as many each
		// round, rather than pay a pass's fixed costs (the head, the
		// commit, the publish) again, up to passSeats. The next anchors
		// are read in the claims' round trip, after them. Not every
		// anchor: in a crowd of one skill, an anchor's neighbours may all
		// have gone to earlier groups of its round, and stopping there
		// left most of the crowd to later passes.
		next := 0
		if dense = len(anchors) >= want && tried > 0 && 2*full >= tried; dense {
			next = min(2*want, (passSeats-p.seats()-len(own)*q.Players)/q.Players)
			if next < q.AnchorDepth {
				// A round of a few anchors costs a round trip like any
				// other: the seats left are the next pass's.
				next = 0
			}
			depth = max(depth, firstRound(q, want))
		} else {
			depth = q.AnchorDepth
		}
		anchors, err = p.formMany(ctx, own, next)
		if err != nil || next <= 0 || len(p.staged)-before < full {
			return err
		}
		want, offered = next, nil // offers are considered in the first round
	}
}

// passSeats bounds the players one pass that reads on through a dense head
// seats (128 pairs, 25 matches of 10): the first of them waits for the
// pass's commit, and a pass's time grows with its seats, 0.06–0.08 ms a
// seat over a million waiting. At 128 the pass rate once bounded the
// matching under a backlog (≈ 4,600 players a second offered 5,000 joins/s
// on two cores; passes have lost round trips since); at 512 a pass over a
// million waiting took 37–57 ms, twice as long as at 256, for a saturated
// throughput no higher beyond the noise (docs/BENCHMARKS.md, eleventh
// pass).
const passSeats = 256

// firstRound is how many anchors the next pass tries first after a pass
// whose largest round, of want anchors, was dense to the end. Under a
// backlog every pass read on through rounds of 10, 20, 40… anchors, a
// round trip each, and on a busy server each round trip waits its turn
// among thousands of goroutines. Starting with the last dense round's size
// (at most half of passSeats, so that a pass still reads on at least once)
// takes two or three fewer round trips a pass, and a backlog clears
// sooner.
func firstRound(q *matcher.QueueConfig, want int) int {
	return max(q.AnchorDepth, min(want, passSeats/(2*q.Players)))
}

// seats counts the players of the staged matches.
func (p *pass) seats() int {
	n := 0
	for _, s := range p.staged {
		n += len(s.group)
	}
	return n
}

// round is one choice of the planner: it restores the anchors read without
// their fields, reads the candidates of offered players (the head's read
// brought those of the own anchors, unless the anchors are the whole pool:
// whole), asks the planner, and forms the groups that seat offered players
// one by one. It returns the plan and the groups of this partition's own
// players, marked used, for formMany.
func (p *pass) round(ctx context.Context, anchors, offered []matcher.Entry, whole bool) (plan.Plan, []plan.Group, error) {
	q := p.e.q
	for _, a := range anchors {
		if _, err := p.restoreBare(ctx, a); err != nil {
			return plan.Plan{}, nil, err
		}
	}
	r := plan.Round{Anchors: anchors, Near: p.near, Whole: whole, Offered: offered, Now: p.now,
		Used: func(id string) bool { return p.used[id] }}
	if whole {
		r.Near = nil
	} else if len(offered) > 0 {
		// Offered players were read elsewhere: their candidates here cost
		// the round one more round trip.
		scans := make([]pool.Scan, 0, len(offered))
		for _, o := range offered {
			scans = append(scans, pool.NearestToScan(o, q.ScanLimit))
		}
		var err error
		if r.OfferedNear, err = p.e.cfg.Pool.ScanMany(ctx, p.e.part, scans); err != nil {
			return plan.Plan{}, nil, fmt.Errorf("read the players near the offered: %w", err)
		}
	}
	chosen := p.e.plan.Choose(q, r)
	var own []plan.Group
	for _, g := range chosen.Groups {
		if g.Crosses() {
			// Claims across partitions keep their order (see claim).
			if err := p.form(ctx, g.Entries, g.FormedBy, g.Bots); err != nil {
				return chosen, nil, err
			}
			continue
		}
		for _, e := range g.Entries {
			p.used[e.TicketID] = true
		}
		own = append(own, g)
	}
	return chosen, own, nil
}

// deadlines resolves every ticket whose deadline has passed: a TIMEOUT match
// with the closest players regardless of window (bots in the empty seats where
// allowed, short-handed when at least MinPlayers), else EXPIRED.
func (p *pass) deadlines(ctx context.Context) error {
	q := p.e.q
	for _, d := range p.due {
		if p.used[d.TicketID] {
			continue
		}
		if bare, err := p.restoreBare(ctx, d); bare || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		others, err := p.read(ctx, p.e.plan.TimeoutRead(q, d))
		if err != nil {
			return fmt.Errorf("read players near %s: %w", d.TicketID, err)
		}
		if g, ok := p.e.plan.Timeout(q, d, others, func(id string) bool { return p.used[id] }); ok {
			err = p.form(ctx, g.Entries, g.FormedBy, g.Bots)
		} else {
			err = p.expire(ctx, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ghosts cancels (reason heartbeat) the tickets whose players have had no
// live socket and sent no heartbeat for the queue's heartbeat timeout, so
// that no ghost is ever matched. A player seen since then has the ticket's
// heartbeat moved up instead, keeping the ticket and its place.
func (p *pass) ghosts(ctx context.Context) error {
	timeout := p.e.q.HeartbeatTimeout
	stale := p.stale
	if len(stale) == 0 {
		return nil
	}
	seen := map[string]time.Time{}
	if p.e.cfg.Presence != nil {
		users := make([]string, 0, len(stale))
		for _, s := range stale {
			users = append(users, s.UserID)
		}
		// Without presence nobody can be judged a ghost: skip, never guess.
		var err error
		if seen, err = p.e.cfg.Presence.LastSeen(ctx, users); err != nil {
			return fmt.Errorf("presence: %w", err)
		}
	}
	for _, s := range stale {
		if p.used[s.TicketID] {
			continue
		}
		if bare, err := p.restoreBare(ctx, s); bare || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		last := s.Heartbeat
		if at, ok := seen[s.UserID]; ok && at.After(last) {
			last = at
		}
		if p.now.Sub(last) < timeout {
			if _, err := p.e.cfg.Pool.Heartbeat(ctx, p.e.part, s.TicketID, last, timeout); err != nil {
				return err
			}
			continue
		}
		if err := p.resolve(ctx, s, matcher.StatusCancelled, matcher.ReasonHeartbeat); err != nil {
			return err
		}
	}
	return nil
}

// restoreBare restores e from the record when it was read without its
// fields (see matcher.Entry), wherever the pass meets it: at the head, at its
// deadline, among the silent. It reports whether e was such an entry.
func (p *pass) restoreBare(ctx context.Context, e matcher.Entry) (bool, error) {
	if e.UserID != "" || e.Home != "" || p.used[e.TicketID] {
		return false, nil
	}
	return true, p.restore(ctx, e)
}

// restore rebuilds a pool entry read without its fields from the record:
// put back with its original scores while WAITING, else removed.
func (p *pass) restore(ctx context.Context, e matcher.Entry) error {
	id := e.TicketID
	p.used[id] = true
	t, err := p.e.cfg.Ledger.Ticket(ctx, id)
	if err != nil && !errors.Is(err, matcher.ErrNotFound) {
		return fmt.Errorf("restore %s: %w", id, err)
	}
	if err == nil && t.Status == matcher.StatusWaiting {
		// Requeue replaces the member, and gives a ticket whose hash is
		// gone a full timeout from now to be seen again.
		_, err = p.e.cfg.Pool.Requeue(ctx, p.e.part, []matcher.Entry{matcher.EntryOf(t)}, matcher.EntryTTL(p.now, t.Deadline), p.now, p.e.q.HeartbeatTimeout)
	} else {
		_, err = p.e.cfg.Pool.RemoveEntry(ctx, []string{p.e.part}, e)
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", id, err)
	}
	return nil
}

// expire ends a ticket nobody could be matched with by its deadline.
func (p *pass) expire(ctx context.Context, d matcher.Entry) error {
	return p.resolve(ctx, d, matcher.StatusExpired, "")
}

// resolve ends a waiting ticket without a match (expired, or cancelled as a
// ghost): the record first, then the pool.
func (p *pass) resolve(ctx context.Context, d matcher.Entry, status matcher.TicketStatus, reason string) error {
	p.used[d.TicketID] = true
	_, events, err := p.e.cfg.Ledger.Resolve(ctx, d.TicketID, status, reason, p.now)
	var nw *matcher.NotWaitingError
	switch {
	case errors.As(err, &nw), errors.Is(err, matcher.ErrNotFound):
		// Already resolved (a cancel won): the pool entry is stale either way.
	case err != nil:
		return fmt.Errorf("resolve %s as %s: %w", d.TicketID, status, err)
	default:
		if status == matcher.StatusExpired {
			p.res.Expired++
			p.record(ctx, nil, p.outcomes([]matcher.Entry{d}, pool.OutcomeExpired))
		} else {
			p.res.Ghosts++
		}
		p.e.cfg.Metrics.Outcome(p.e.q.Name, string(status))
	}
	// By the entry's member: the ticket's hash may be gone.
	if _, err := p.e.cfg.Pool.RemoveEntry(ctx, p.e.pools, d); err != nil {
		return fmt.Errorf("remove %s: %w", d.TicketID, err)
	}
	p.deliver(ctx, events)
	return nil
}

// form claims the group in Redis (all or nothing, fenced) and gets it a
// server; the match is committed with the pass's others by commit. Offered
// players are claimed from their home pools after the own players (see
// offers.go). Whatever fails on the way puts every player still waiting
// back where they came from with their original scores, and gives the
// server back.
func (p *pass) form(ctx context.Context, group []matcher.Entry, formedBy string, bots int) error {
	m := p.newMatch(group, formedBy, bots)
	claimed, err := p.claim(ctx, m.ID, group)
	if err != nil || claimed == nil {
		return err
	}
	for _, c := range claimed {
		seatName(&m, c.TicketID, c.Name)
	}
	for _, g := range group {
		p.used[g.TicketID] = true
	}
	p.stageMany(ctx, []staged{{m: m, group: group}})
	return nil
}

// formMany is form for groups of this partition's own players, claimed in
// one round trip. A group that lost a player to a cancel (or another
// matcher) since it was read is not formed; its other players wait for the
// next pass. The groups' players are already marked used. With next > 0 it
// also returns the next oldest waiters, read after the claims in the same
// round trip.
func (p *pass) formMany(ctx context.Context, groups []plan.Group, next int) ([]matcher.Entry, error) {
	var then []pool.Scan
	if next > 0 {
		then = append(then, p.scanOf(p.e.plan.Head(p.e.q, next)))
	}
	if len(groups) == 0 && len(then) == 0 {
		return nil, nil
	}
	ms := make([]matcher.Match, len(groups))
	reqs := make([]pool.ClaimRequest, len(groups))
	for i, g := range groups {
		ms[i] = p.newMatch(g.Entries, g.FormedBy, g.Bots)
		ms[i].Provider = g.Provider
		reqs[i] = pool.ClaimRequest{MatchID: ms[i].ID, Entries: g.Entries}
	}
	cs, read, err := p.e.cfg.Pool.ClaimMany(ctx, p.e.part, p.fence, reqs, then...)
	if err != nil {
		return nil, err
	}
	var (
		failed  error
		claimed []staged
	)
	for i, c := range cs {
		switch {
		case c.Err != nil:
			// Unknown (or refused by the fence): if the claim did run, the
			// reconciler puts the players back once it expires.
			if failed == nil {
				failed = c.Err
			}
		case !c.OK:
			p.e.cfg.Metrics.claimConflict(p.e.q.Name)
		default:
			for j, e := range groups[i].Entries {
				if j < len(c.Names) {
					seatName(&ms[i], e.TicketID, c.Names[j])
				}
			}
			claimed = append(claimed, staged{m: ms[i], group: groups[i].Entries})
		}
	}
	p.stageMany(ctx, claimed)
	if next > 0 {
		return read[0], failed
	}
	return nil, failed
}

// newMatch is the match a group is to become.
func (p *pass) newMatch(group []matcher.Entry, formedBy string, bots int) matcher.Match {
	q := p.e.q
	m := matcher.Match{
		ID: uuid.NewString(), Queue: q.Name, Region: p.e.cfg.Region, State: matcher.MatchReady,
		FormedBy: formedBy, Bots: bots, CreatedAt: p.now.UTC().Truncate(time.Microsecond), Version: 1,
		Shard: p.e.cfg.Shard,
	}
	if q.AcceptWindow > 0 {
		m.State = matcher.MatchPendingAccept
		by := m.CreatedAt.Add(q.AcceptWindow)
		m.AcceptBy = &by
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range group {
		m.Players = append(m.Players, matcher.Player{TicketID: g.TicketID, UserID: g.UserID, Name: g.Name, Skill: g.Skill})
		lo, hi = math.Min(lo, g.Skill), math.Max(hi, g.Skill)
	}
	m.Spread = hi - lo
	return m
}

// allocateInFlight bounds the allocations one pass asks for at once: a
// backlog's pass forms up to passSeats/2 matches, and asked one after the
// other, 128 answers of 20 ms each would outlast the pass's allocation
// budget.
const allocateInFlight = 16

// stageMany gets the claimed groups servers, allocateInFlight at a time,
// and adds them to the pass's commit in their order; a group with no server
// goes back to the pool.
func (p *pass) stageMany(ctx context.Context, st []staged) {
	if len(st) == 0 {
		return
	}
	if p.e.q.Kind == matcher.KindProvider {
		// A provider's slot, not a game server.
		p.stageSlots(ctx, st)
		return
	}
	if p.e.cfg.Allocator == nil {
		p.staged = append(p.staged, st...)
		return
	}
	q := p.e.q
	// One budget for the pass's allocations, inside the pass's: a fleet
	// manager that hangs costs the pass this much once, and the groups
	// after it go back at once rather than hanging in turn (four hanging
	// calls in a row once held a pass, and the deadlines behind it, for
	// 17 s).
	if p.allocBy.IsZero() {
		p.allocBy = time.Now().Add(p.e.cfg.AllocateTimeout)
	}
	actx, cancel := context.WithDeadline(ctx, p.allocBy)
	defer cancel()
	errs := make([]error, len(st))
	var wg sync.WaitGroup
	sem := make(chan struct{}, allocateInFlight)
	for i := range st {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m := &st[i].m
			req := AllocationRequest{MatchID: m.ID, Queue: q.Name, Region: m.Region, Players: m.Players, Bots: m.Bots}
			start := time.Now()
			srv, err := allocate(actx, p.e.cfg.Allocator, req, p.e.cfg.AllocateBackoff, p.e.cfg.Sleep)
			p.e.cfg.Metrics.allocationTook(q.Name, time.Since(start))
			if err != nil {
				errs[i] = err
				return
			}
			m.Server = &srv
		})
	}
	wg.Wait()
	failures := 0
	for i, s := range st {
		if err := errs[i]; err != nil {
			// Never another region: everyone goes back with their place,
			// and the next pass tries again.
			p.e.cfg.Metrics.allocation(q.Name, "failed")
			failures++
			p.e.log.Warn("no server; the players go back to the pool", "match", s.m.ID, "err", err)
			p.requeue(ctx, s.m.ID, s.group)
			continue
		}
		p.e.cfg.Metrics.allocation(q.Name, "ok")
		p.staged = append(p.staged, s)
	}
	if failures > 0 {
		p.res.AllocationFailures += failures
		mctx, cancel := p.e.cleanupContext(ctx)
		if err := p.e.cfg.Pool.MarkAllocationFailure(mctx, p.e.part, p.now, allocFailureMemory(q)); err != nil {
			p.e.log.Debug("remember allocation failure", "err", err)
		}
		cancel()
	}
}

// commit writes the pass's claimed matches to the record in one
// transaction (one round trip and one log flush however many formed), then
// indexes, records and publishes them together. A match that fell short
// (someone cancelled after the claim) puts its still-waiting players back;
// the others stand. The matches of an earlier pass whose commit's outcome
// is still unknown are tried again first (see settle).
func (p *pass) commit(ctx context.Context) error {
	var errs []error
	if prev := p.e.takeUnsettled(); len(prev) > 0 {
		errs = append(errs, p.commitBatch(ctx, prev, nil))
	}
	if len(p.staged) > 0 {
		st := p.staged
		p.staged = nil
		errs = append(errs, p.commitBatch(ctx, st, p.e.cfg.CommitRetry))
	}
	return errors.Join(errs...)
}

// commitBatch commits st, asking the record after a failure of the whole
// batch (see settle) with a new try after each wait of retry.
func (p *pass) commitBatch(ctx context.Context, st []staged, retry []time.Duration) error {
	ms := make([]matcher.Match, len(st))
	for i, s := range st {
		ms[i] = s.m
	}
	rs, err := p.commitTry(ctx, ms)
	if err != nil {
		p.e.log.Warn("commit failed as a whole; asking the record what it holds", "matches", len(ms), "err", err)
		rs = p.settle(ctx, ms, err, retry)
	}
	// Everything after the commit on a context of its own: the matches
	// stand whatever became of the pass's.
	ctx, cancel := p.e.cleanupContext(ctx)
	defer cancel()
	// Sized once: grown match by match, the events were most of what a
	// commit allocated.
	nev, seats := 0, 0
	for i, s := range st {
		nev += len(rs[i].Events)
		seats += len(s.group)
	}
	var (
		failed    error
		events    = make([]matcher.Event, 0, nev)
		outs      = make([]pool.Outcome, 0, seats)
		matched   = make([]time.Time, 0, len(st))
		pending   []pool.Pending
		unsettled []staged
	)
	for i, s := range st {
		m, group := s.m, s.group
		if err := rs[i].Err; err != nil {
			if errors.Is(err, errUnsettled) {
				// Maybe committed: neither released nor requeued.
				unsettled = append(unsettled, s)
				continue
			}
			p.release(ctx, m)
			back := group
			var sf *matcher.ShortfallError
			if errors.As(err, &sf) {
				still := make(map[string]bool, len(sf.Waiting))
				for _, id := range sf.Waiting {
					still[id] = true
				}
				back = back[:0:0]
				for _, g := range group {
					if still[g.TicketID] {
						back = append(back, g)
					}
				}
				p.e.cfg.Metrics.claimConflict(p.e.q.Name)
			} else if failed == nil {
				failed = fmt.Errorf("commit match %s: %w", m.ID, err)
			}
			p.requeue(ctx, m.ID, back)
			continue
		}
		if m.State == matcher.MatchPendingAccept {
			pending = append(pending, pool.Pending{MatchID: m.ID, AcceptBy: *m.AcceptBy})
		}
		p.withdraw(ctx, group)
		p.res.Matches++
		p.res.Players += len(group)
		p.e.cfg.Metrics.matched(m, group, p.now)
		kind := pool.OutcomeMatched
		if m.FormedBy == matcher.FormedTimeout {
			kind = pool.OutcomeTimeout
		}
		outs = p.appendOutcomes(outs, group, kind)
		matched = append(matched, p.now)
		events = append(events, rs[i].Events...)
	}
	// Indexed before anyone is told, in one round trip for the pass (one
	// per match held the engine a round trip per match under load).
	if err := p.e.cfg.Pool.AddPending(ctx, p.e.base, pending...); err != nil {
		// The reconciler rebuilds the index from the record.
		p.e.log.Warn("index pending matches; left to the reconciler", "matches", len(pending), "err", err)
	}
	// The players first: the outcome counts only feed statistics.
	p.deliver(ctx, events)
	p.record(ctx, matched, outs)
	if len(unsettled) > 0 {
		p.e.keepUnsettled(unsettled)
		return errors.Join(failed, fmt.Errorf("commit of %d matches: outcome unknown, asked again next pass: %w", len(unsettled), err))
	}
	return failed
}

// commitTry is one try of a commit, on a context of its own.
func (p *pass) commitTry(ctx context.Context, ms []matcher.Match) ([]matcher.CommitResult, error) {
	ctx, cancel := p.e.commitContext(ctx)
	defer cancel()
	return p.e.cfg.Ledger.CommitMatches(ctx, ms, p.fence)
}

// errUnsettled marks a match whose commit may or may not have been written.
var errUnsettled = errors.New("commit outcome unknown")

// maxSettleTries is how many passes in a row the record is asked about a
// commit whose outcome is unknown before it is left to the reconciler.
const maxSettleTries = 5

// settle finds out what became of ms after their commit failed as a whole
// with err: a dropped connection or a timeout may have lost only the reply
// of a commit that was written. Releasing the servers and requeueing the
// players then would hand a server to two matches (the relay still pushes
// match.ready with it) and put MATCHED players back in the pool. So the same
// match ids are committed again after each wait of retry: the commit is
// idempotent for them (a commit already made answers committed, with no
// events, the first try's being in the outbox for the relay; one not made
// is made now, with its events). On PostgreSQL its tickets are locked
// first, so a retry also waits for a first try still running. A match the
// retry did not commit (stale lease, shortfall), or every match when no
// retry got an answer, is read back: a match row in the record is a commit
// that landed (the epoch may have moved after it, or the match dissolved
// since); none is proof that nothing of it was written. A match neither
// try nor read could tell about gets errUnsettled: the caller neither
// releases nor requeues it and asks again at its next pass's commit, up to
// maxSettleTries passes, then leaves it to the reconciler, which puts its
// players back if it was not written once their claim is dead or expired.
// Its server is then never released, which a fleet manager reclaims (see
// docs/ALLOCATOR.md): a leaked server costs less than one handed to two
// matches.
func (p *pass) settle(ctx context.Context, ms []matcher.Match, err error, retry []time.Duration) []matcher.CommitResult {
	var rs []matcher.CommitResult
	for _, d := range retry {
		// Sleep on no deadline of the pass's: the waits are bounded.
		if p.e.cfg.Sleep(context.WithoutCancel(ctx), d) != nil {
			break
		}
		if rs, err = p.commitTry(ctx, ms); err == nil {
			break
		}
	}
	if rs == nil {
		rs = make([]matcher.CommitResult, len(ms))
		for i := range rs {
			rs[i].Err = fmt.Errorf("%w: %w", errUnsettled, err)
		}
	}
	for i, r := range rs {
		if r.Err == nil {
			continue
		}
		rctx, cancel := p.e.commitContext(ctx)
		_, rerr := p.e.cfg.Ledger.Match(rctx, ms[i].ID)
		cancel()
		switch {
		case rerr == nil:
			rs[i] = matcher.CommitResult{} // written: its events went with it
		case errors.Is(rerr, matcher.ErrNotFound):
			if errors.Is(r.Err, errUnsettled) {
				rs[i].Err = fmt.Errorf("commit match %s: not in the record after %w", ms[i].ID, err)
			}
		default:
			rs[i].Err = fmt.Errorf("%w: read match %s back: %w", errUnsettled, ms[i].ID, rerr)
		}
	}
	return rs
}

// keepUnsettled keeps matches whose commit's outcome is unknown for the
// next pass's commit; those already asked about maxSettleTries times are
// left to the reconciler.
func (e *Engine) keepUnsettled(st []staged) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range st {
		if s.tries++; s.tries >= maxSettleTries {
			e.log.Error("commit outcome still unknown; left to the reconciler", "match", s.m.ID, "tries", s.tries)
			continue
		}
		e.unsettled = append(e.unsettled, s)
	}
}

// takeUnsettled hands the matches kept by keepUnsettled to a commit.
func (e *Engine) takeUnsettled() []staged {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.unsettled
	e.unsettled = nil
	return st
}

// claim takes the group out of the pools: the own players with this
// partition's fence, the offered players of each home partition unfenced
// (see offers.go). The pools are claimed in name order, whoever claims: two
// neighbours reaching for each other's players at once then meet at the same
// first pool, and one of them gets everything instead of each getting half
// and both putting it back. It returns nil, nil when someone was gone (every
// ticket claimed so far is put back, the missing ones are not tried again
// this pass).
func (p *pass) claim(ctx context.Context, matchID string, group []matcher.Entry) ([]matcher.Entry, error) {
	byHome := map[string][]matcher.Entry{}
	var homes []string
	for _, g := range group {
		h := g.Home
		if h == "" {
			h = p.e.part
		}
		if byHome[h] == nil {
			homes = append(homes, h)
		}
		byHome[h] = append(byHome[h], g)
	}
	sort.Strings(homes)
	var claimed []matcher.Entry
	for _, h := range homes {
		es := byHome[h]
		if len(es) == 0 {
			continue
		}
		fence := p.fence
		if h != p.e.part {
			// Another partition's pool: its fence is not ours to hold. The
			// claim script's membership test and the record's row count
			// keep the player in one match whoever claims.
			fence = 0
		}
		res, err := p.e.cfg.Pool.Claim(ctx, h, fence, matchID, es)
		if err != nil {
			p.requeue(ctx, matchID, claimed)
			return nil, fmt.Errorf("claim %s: %w", matchID, err)
		}
		if !res.OK {
			// Someone else (a cancel, another matcher) took these first.
			for _, id := range res.Missing {
				p.used[id] = true
			}
			if h != p.e.part {
				if err := p.e.cfg.Pool.WithdrawOffers(ctx, p.e.part, res.Missing...); err != nil {
					p.e.log.Debug("withdraw stale offers", "err", err)
				}
			}
			p.e.cfg.Metrics.claimConflict(p.e.q.Name)
			p.requeue(ctx, matchID, claimed)
			return nil, nil
		}
		for i := range es {
			if i < len(res.Names) {
				es[i].Name = res.Names[i]
			}
		}
		claimed = append(claimed, es...)
	}
	return claimed, nil
}

// seatName gives the seat of ticketID the display name its claim read
// from the pool: a pass reads entries without their names (see
// matcher.Entry).
func seatName(m *matcher.Match, ticketID, name string) {
	for i := range m.Players {
		if m.Players[i].TicketID == ticketID {
			m.Players[i].Name = name
			return
		}
	}
}

// requeue puts claimed entries back into the pools they came from, with
// their original scores; one whose keys Redis lost meanwhile is seen at the
// pass's clock (see Pool.Requeue): its player's presence record went too.
// One waiting or claimed in a sibling pool since is left there (see
// Pool.RequeueGuarded).
func (p *pass) requeue(ctx context.Context, matchID string, es []matcher.Entry) {
	if len(es) == 0 {
		return
	}
	ctx, cancel := p.e.cleanupContext(ctx)
	defer cancel()
	byHome := map[string][]matcher.Entry{}
	for _, e := range es {
		h := e.Home
		if h == "" {
			h = p.e.part
		}
		e.Home = ""
		byHome[h] = append(byHome[h], e)
	}
	for h, back := range byHome {
		// Guarded by the other pools of a sharded (queue, region): once
		// this owner is deposed, the reconciler of its successor puts its
		// claims back, and a ticket may have been promoted or claimed
		// elsewhere since.
		var siblings []string
		if slices.Contains(p.e.pools, h) {
			siblings = p.e.pools
		}
		if _, err := p.e.cfg.Pool.RequeueGuarded(ctx, h, siblings, back, p.hashTTL(back), p.now, p.e.q.HeartbeatTimeout); err != nil {
			// The reconciler re-adds them from the record.
			p.e.log.Error("requeue after failed match", "match", matchID, "pool", h, "err", err)
		}
	}
}

// release gives back the server, or the provider's slot, of a match that
// will not be played.
func (p *pass) release(ctx context.Context, m matcher.Match) {
	if m.Provider != nil {
		ctx, cancel := p.e.cleanupContext(ctx)
		defer cancel()
		p.e.cfg.endAssignment(ctx, p.e.log, m, "not committed", p.now)
		return
	}
	if p.e.cfg.Allocator == nil || m.Server == nil {
		return
	}
	ctx, cancel := p.e.cleanupContext(ctx)
	defer cancel()
	if err := p.e.cfg.Allocator.Release(ctx, m.ID, *m.Server); err != nil {
		p.e.log.Warn("release server", "match", m.ID, "server", m.Server.Address, "err", err)
	}
}

// cleanupContext is the context of one release or requeue: its own budget,
// on no deadline or cancel of the pass's, so that a pass cut short (a fleet
// manager that hung, an engine stopping) still puts back everyone it took
// and gives back every server it was handed.
func (e *Engine) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.CleanupTimeout)
}

// commitContext is the context of one try of a commit, on no deadline or
// cancel of the pass's, for the same reason.
func (e *Engine) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.cfg.CommitTimeout)
}

// outcomes are resolved tickets as the queue's wait estimates keep them.
// The wait is measured from the real join, which is the deadline minus the
// queue's deadline (the pool keeps only the effective enqueue time, moved
// by a priority head start).
func (p *pass) outcomes(es []matcher.Entry, kind string) []pool.Outcome {
	return p.appendOutcomes(make([]pool.Outcome, 0, len(es)), es, kind)
}

// appendOutcomes is outcomes appended to outs.
func (p *pass) appendOutcomes(outs []pool.Outcome, es []matcher.Entry, kind string) []pool.Outcome {
	for _, e := range es {
		joined := e.Deadline.Add(-p.e.q.Deadline)
		outs = append(outs, pool.Outcome{At: p.now, Wait: max(0, p.now.Sub(joined)), Kind: kind})
	}
	return outs
}

// record keeps resolved tickets and formed matches for the queue's wait
// estimates.
func (p *pass) record(ctx context.Context, matchAts []time.Time, outs []pool.Outcome) {
	if len(matchAts) == 0 && len(outs) == 0 {
		return
	}
	if err := p.e.cfg.Pool.RecordOutcomes(ctx, p.e.base, matchAts, outs); err != nil {
		p.e.log.Debug("record outcomes", "err", err)
	}
}

// allocFailureMemory is how long an allocation failure is reported by
// explain: a few passes.
func allocFailureMemory(q *matcher.QueueConfig) time.Duration { return max(10*q.Tick, 5*time.Second) }

func (p *pass) deliver(ctx context.Context, events []matcher.Event) {
	if p.e.cfg.Notifier != nil && len(events) > 0 {
		p.e.cfg.Notifier.Deliver(ctx, events)
	}
}

// hashTTL outlives the latest deadline of the entries by the slack the
// deadline path needs.
func (p *pass) hashTTL(es []matcher.Entry) time.Duration {
	var last time.Time
	for _, e := range es {
		if e.Deadline.After(last) {
			last = e.Deadline
		}
	}
	return matcher.EntryTTL(p.now, last)
}
