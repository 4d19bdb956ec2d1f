package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/pool"
)

// RunnerConfig configures the matcher role of a process.
type RunnerConfig struct {
	Queues matcher.Config // normalized
	// Deps are the engines' (and the reconciler's).
	engine.Deps
	// Redis carries wake-ups between processes (a join on one gateway wakes
	// the owner of the partition wherever it runs) and the registry of live
	// matchers. Required.
	Redis redis.UniversalClient
	// Prefix of the wake channel and the registry. Default "mg".
	Prefix string
	// Owner names this matcher in leases; default: a random id.
	Owner string
	// LeaseTTL is the life of a partition lease; it is renewed every
	// LeaseTTL/10, and a dead owner's partitions are taken over within about
	// one LeaseTTL, which bounds how late a killed matcher's tickets resolve
	// after their deadline. Default 4s: a renewal must then fail for 4 s in a
	// row before a live owner is fenced, which only costs a takeover.
	LeaseTTL time.Duration
	// ReconcileEvery is the period of the record↔pool repair. Default 10s.
	ReconcileEvery time.Duration
}

// Runner is the matcher role of a process: it takes a fair share of the
// partitions' leases, runs one Engine per partition it holds, and reconciles
// those partitions. Several Runners in several processes share the
// partitions through the leases.
//
// No partition of the record is left without an owner, whatever the
// configuration: a (queue, region) that holds WAITING tickets or
// PENDING_ACCEPT matches but that no queue of the configuration covers (a
// queue retired, a region removed, across a restart) is leased like the
// others and served by an orphan sweep (see orphans.go), and the tickets a
// changed `shards` count left in a sub-pool that no longer exists are moved
// to the pool their user now hashes to.
type Runner struct {
	cfg   RunnerConfig
	topo  atomic.Pointer[topology]
	setMu sync.Mutex // serialises SetQueues and the orphans' refresh
	log   *slog.Logger

	mu   sync.Mutex
	held map[string]*holding
	// stops owns the goroutines that wait for a released or lost
	// partition's engine to stop, so the lease loop never waits for a pass.
	stops sync.WaitGroup
}

// Holding states: a partition being released keeps its lease renewed (its
// engine may still commit) until its engine has stopped; a lost one is
// fenced at once.
const (
	holdActive = iota
	holdReleasing
	holdLost
)

// holding is one partition this runner owns.
type holding struct {
	token      int64
	validUntil atomic.Int64 // unix ms; past it the engine stops claiming
	cancel     context.CancelFunc
	done       chan struct{}
	state      int // guarded by Runner.mu
}

// NewRunner builds the engines; it starts nothing.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Redis == nil || cfg.Pool == nil || cfg.Ledger == nil {
		return nil, errors.New("runner: Redis, Pool and Ledger are required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	if cfg.Owner == "" {
		cfg.Owner = uuid.NewString()
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 4 * time.Second
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, held: map[string]*holding{}, log: cfg.Logger.With("owner", cfg.Owner)}
	t, _, err := r.build(cfg.Queues, &topology{engines: map[string]*engine.Engine{}})
	if err != nil {
		return nil, err
	}
	r.topo.Store(withOrphans(t, nil))
	return r, nil
}

// topology is the set of engines and orphans in force, swapped whole by
// SetQueues and by the orphans' refresh.
type topology struct {
	engines map[string]*engine.Engine
	// orphans are the (queue, region)s of the record no engine covers,
	// by their lease name (the (queue, region) itself).
	orphans map[string]matcher.Partition
	order   []string
}

// has reports whether part is a partition of the topology.
func (t *topology) has(part string) bool {
	_, orphan := t.orphans[part]
	return t.engines[part] != nil || orphan
}

// build makes the topology of c, reusing old's engines whose queue is
// unchanged. The engines of old whose (queue, region) c no longer has are
// kept, so the tickets still waiting there are matched or resolved by
// their deadline; the Service takes no new joins for them. An engine of
// old whose (queue, region) c still has but whose pool it does not (a
// changed shards count) goes: its tickets are moved to their new pools
// (see rehome). Orphans are not set (see withOrphans). changed lists the
// partitions of old, engines or orphans, whose engine is replaced.
func (r *Runner) build(c matcher.Config, old *topology) (t *topology, changed []string, err error) {
	t = &topology{engines: map[string]*engine.Engine{}}
	covered := map[matcher.Partition]bool{}
	for i := range c.Queues {
		q := c.Queues[i]
		if !q.Matched() {
			continue // admitted by package admission, not matched
		}
		for _, region := range q.Regions {
			covered[matcher.Partition{Queue: q.Name, Region: region}] = true
			for _, p := range q.Pools(region) {
				part := p.String()
				if e := old.engines[part]; e != nil && reflect.DeepEqual(*e.Queue(), q) {
					t.engines[part] = e
					t.order = append(t.order, part)
					continue
				}
				e, err := engine.NewEngine(engine.EngineConfig{
					Deps:   r.cfg.Deps,
					Queue:  q,
					Region: region,
					Shard:  p.Shard,
					Fence:  func() int64 { return r.fence(part) },
				})
				if err != nil {
					return nil, nil, err
				}
				if old.has(part) {
					changed = append(changed, part)
				}
				t.engines[part] = e
				t.order = append(t.order, part)
			}
		}
	}
	for _, part := range old.order {
		e := old.engines[part]
		if e == nil || t.engines[part] != nil || covered[e.Partition().Base()] {
			continue
		}
		t.engines[part] = e
		t.order = append(t.order, part)
	}
	return t, changed, nil
}

// withOrphans is t with an orphan for every (queue, region) of live that
// no engine of t covers.
func withOrphans(t *topology, live []matcher.Partition) *topology {
	out := &topology{engines: t.engines, orphans: map[string]matcher.Partition{}}
	covered := map[matcher.Partition]bool{}
	for _, part := range t.order {
		if e := t.engines[part]; e != nil {
			covered[e.Partition().Base()] = true
			out.order = append(out.order, part)
		}
	}
	for _, p := range live {
		if !covered[p] && !out.has(p.String()) {
			out.orphans[p.String()] = p
			out.order = append(out.order, p.String())
		}
	}
	return out
}

// SetQueues puts a new (normalized) queue configuration in force without a
// restart: new partitions are taken up by the lease loop, a partition whose
// queue changed is released and taken up again with its new engine (here
// or by another matcher), and a removed queue's partitions keep running
// until restart so that no waiting ticket is stranded (after a restart
// they are orphans). Releases do not wait for the engines' passes.
func (r *Runner) SetQueues(c matcher.Config) error {
	r.setMu.Lock()
	defer r.setMu.Unlock()
	old := r.topo.Load()
	t, changed, err := r.build(c, old)
	if err != nil {
		return fmt.Errorf("set queues: %w", err)
	}
	r.topo.Store(withOrphans(t, orphanList(old)))
	for _, part := range changed {
		r.release(part)
	}
	return nil
}

// refreshOrphans reads the record's live (queue, region)s and puts the
// topology's orphans in line with them: new orphans are taken up by the
// lease loop, resolved ones are released by it.
func (r *Runner) refreshOrphans(ctx context.Context) error {
	live, err := r.cfg.Ledger.LivePartitions(ctx)
	if err != nil {
		return fmt.Errorf("refresh orphans: %w", err)
	}
	r.setMu.Lock()
	defer r.setMu.Unlock()
	r.topo.Store(withOrphans(r.topo.Load(), live))
	return nil
}

func orphanList(t *topology) []matcher.Partition {
	out := make([]matcher.Partition, 0, len(t.orphans))
	for _, part := range t.order {
		if p, ok := t.orphans[part]; ok {
			out = append(out, p)
		}
	}
	return out
}

// WakeChannel is the pub/sub channel of wake-ups.
func WakeChannel(prefix string) string {
	if prefix == "" {
		prefix = "mg"
	}
	return prefix + ":wake"
}

func (r *Runner) registryKey() string { return r.cfg.Prefix + ":matchers" }

// fence is the token of a held partition whose lease is still valid, else 0.
func (r *Runner) fence(part string) int64 {
	r.mu.Lock()
	h := r.held[part]
	r.mu.Unlock()
	if h == nil || r.cfg.Now().UnixMilli() >= h.validUntil.Load() {
		return 0
	}
	return h.token
}

// Held lists the partitions this runner owns now, leaving out those being
// given up.
func (r *Runner) Held() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.held))
	for p, h := range r.held {
		if h.state == holdActive {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// renewable lists the partitions whose lease is renewed: those held and
// those being released whose engine has not stopped yet.
func (r *Runner) renewable() map[string]*holding {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]*holding, len(r.held))
	for p, h := range r.held {
		if h.state != holdLost {
			out[p] = h
		}
	}
	return out
}

// Wake asks the partition's engine for a pass now, if this runner owns it,
// and reports whether it does.
func (r *Runner) Wake(p matcher.Partition) bool {
	if e := r.topo.Load().engines[p.String()]; e != nil {
		e.Wake()
		return true
	}
	return false
}

// Run manages leases, engines, wake-ups and reconciliation until ctx ends;
// then it stops every engine (each finishes its pass), releases the leases so
// another matcher takes over at once, and returns.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.refreshOrphans(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("find orphan partitions", "err", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.listen(ctx) })
	wg.Go(func() { r.reconcileLoop(ctx) })
	r.leaseLoop(ctx)
	wg.Wait()
	r.releaseAll()
	return nil
}

func (r *Runner) leaseLoop(ctx context.Context) {
	every := r.cfg.LeaseTTL / 10
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.leaseRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// leaseRound renews what is held, gives up what exceeds a fair share or
// left the topology, and takes free partitions up to the share. The fair
// share is ceil(partitions / live matchers), the live matchers being those
// that registered within a TTL. Nothing in it waits for an engine's pass:
// a release lets the engine finish in the background, its lease renewed
// here meanwhile.
func (r *Runner) leaseRound(ctx context.Context) {
	now := r.cfg.Now()
	ttl := r.cfg.LeaseTTL
	live := 1
	pipe := r.cfg.Redis.TxPipeline()
	pipe.ZAdd(ctx, r.registryKey(), redis.Z{Score: float64(now.UnixMilli()), Member: r.cfg.Owner})
	pipe.ZRemRangeByScore(ctx, r.registryKey(), "-inf", strconv.FormatInt(now.Add(-ttl).UnixMilli(), 10))
	card := pipe.ZCard(ctx, r.registryKey())
	if _, err := pipe.Exec(ctx); err == nil {
		live = max(1, int(card.Val()))
	} else if ctx.Err() == nil {
		r.log.Warn("matcher registry", "err", err)
	}
	topo := r.topo.Load()
	share := (len(topo.order) + live - 1) / live

	for part, h := range r.renewable() {
		start := r.cfg.Now()
		ok, err := r.cfg.Pool.RenewLease(ctx, part, r.cfg.Owner, h.token, start, ttl)
		switch {
		case err != nil:
			// Unknown: keep working until the lease would have expired;
			// the fence refuses anything after.
			if r.cfg.Now().UnixMilli() >= h.validUntil.Load() {
				r.drop(part, h, "lease unconfirmed past its expiry")
			}
		case !ok:
			r.drop(part, h, "lease lost")
		default:
			h.validUntil.Store(start.Add(ttl).UnixMilli())
		}
	}

	var held []string
	for _, part := range r.Held() {
		if !topo.has(part) {
			r.release(part)
			continue
		}
		held = append(held, part)
	}
	for i := share; i < len(held); i++ {
		r.release(held[i])
	}
	if len(held) >= share || ctx.Err() != nil {
		return
	}
	// Start at an owner-dependent offset so that matchers starting together
	// do not all race for the same partitions first.
	n := len(topo.order)
	off := int(hash32(r.cfg.Owner) % uint32(n))
	for i := 0; i < n && len(r.Held()) < share; i++ {
		part := topo.order[(off+i)%n]
		if r.isHeld(part) {
			continue
		}
		r.acquire(ctx, topo, part)
	}
}

func hash32(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// isHeld reports whether part is held in any state: one being released or
// lost is not taken again before its engine has stopped.
func (r *Runner) isHeld(part string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[part] != nil
}

// acquire takes a free partition: the Redis lease with a token above the
// recorded epoch, then the record's epoch (which waits out, and from then on
// refuses, the commits of any previous owner), then a reconciliation so the
// new owner starts from the record's truth, then the engine (or, for an
// orphan, its sweep). A failure to record the epoch gives the lease up;
// the next acquisition takes a new, greater token, so no token is ever
// recorded twice (the record refuses an epoch that is not above its own).
func (r *Runner) acquire(ctx context.Context, topo *topology, part string) {
	e, orphan := topo.engines[part], topo.orphans[part]
	if e == nil && orphan.Queue == "" {
		return
	}
	floor, err := r.cfg.Ledger.LeaseEpoch(ctx, part)
	if err != nil {
		r.log.Warn("read lease epoch", "partition", part, "err", err)
		return
	}
	start := r.cfg.Now()
	token, err := r.cfg.Pool.AcquireLease(ctx, part, r.cfg.Owner, start, r.cfg.LeaseTTL, floor)
	if err != nil || token == 0 {
		if err != nil && ctx.Err() == nil {
			r.log.Warn("acquire lease", "partition", part, "err", err)
		}
		return
	}
	if err := r.cfg.Ledger.SetLeaseEpoch(ctx, part, token); err != nil {
		r.log.Warn("record lease epoch", "partition", part, "token", token, "err", err)
		_, _ = r.cfg.Pool.ReleaseLease(context.WithoutCancel(ctx), part, r.cfg.Owner, token)
		return
	}
	engCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &holding{token: token, cancel: cancel, done: make(chan struct{})}
	h.validUntil.Store(start.Add(r.cfg.LeaseTTL).UnixMilli())
	r.mu.Lock()
	r.held[part] = h
	r.mu.Unlock()
	r.cfg.Metrics.Lease(part, "acquired")
	r.log.Info("partition acquired", "partition", part, "token", token, "orphan", e == nil)
	// The reconciliation runs in the engine's goroutine, with the lease
	// already registered, so the lease loop keeps renewing every partition
	// while a large one is being rebuilt.
	go func() {
		defer close(h.done)
		if e == nil {
			r.runOrphan(engCtx, orphan)
			return
		}
		r.repair(engCtx, e)
		e.Wake()
		_ = e.Run(engCtx)
	}()
}

// repair brings an engine's pool in line with the record: the tickets left
// in pools its (queue, region) no longer has are moved first (by the pool
// that closes the accept windows, one per (queue, region)), then the pool
// is reconciled.
func (r *Runner) repair(ctx context.Context, e *engine.Engine) {
	part := e.Partition()
	if part.Shard == "" || part.Shard == matcher.OverflowShard {
		if _, err := r.rehome(ctx, e.Queue(), part.Base(), r.cfg.Now()); err != nil && ctx.Err() == nil {
			r.log.Warn("rehome tickets of retired pools", "partition", part.String(), "err", err)
		}
	}
	if _, err := reconcile(ctx, r.cfg.Ledger, r.cfg.Pool, e.Queue(), part, r.cfg.Now()); err != nil && ctx.Err() == nil {
		r.log.Warn("reconcile", "partition", part.String(), "err", err)
	}
}

// drop stops working a partition whose lease is gone: fenced at once, its
// engine stopped in the background.
func (r *Runner) drop(part string, h *holding, why string) {
	r.mu.Lock()
	if r.held[part] != h || h.state == holdLost {
		r.mu.Unlock()
		return
	}
	releasing := h.state == holdReleasing
	h.state = holdLost
	r.mu.Unlock()
	h.validUntil.Store(0)
	h.cancel()
	r.cfg.Metrics.Lease(part, "lost")
	r.log.Warn("partition lost", "partition", part, "token", h.token, "why", why)
	if releasing {
		return // the release's goroutine forgets it
	}
	r.stops.Go(func() {
		<-h.done
		r.forget(part, h)
	})
}

// release stops the partition's engine (its pass finishes, its lease
// renewed by the lease loop meanwhile) and then frees the lease for
// another matcher. It does not wait for the engine.
func (r *Runner) release(part string) {
	r.mu.Lock()
	h := r.held[part]
	if h == nil || h.state != holdActive {
		r.mu.Unlock()
		return
	}
	h.state = holdReleasing
	r.mu.Unlock()
	h.cancel()
	r.stops.Go(func() {
		<-h.done
		r.mu.Lock()
		lost := h.state == holdLost
		r.mu.Unlock()
		r.forget(part, h)
		h.validUntil.Store(0)
		if lost {
			return
		}
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := r.cfg.Pool.ReleaseLease(rctx, part, r.cfg.Owner, h.token); err != nil {
			r.log.Warn("release lease", "partition", part, "err", err)
		}
		r.cfg.Metrics.Lease(part, "released")
		r.log.Info("partition released", "partition", part, "token", h.token)
	})
}

// forget removes h, whose engine has stopped, from the held partitions.
func (r *Runner) forget(part string, h *holding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[part] == h {
		delete(r.held, part)
	}
}

// releaseAll releases every partition and waits for their engines.
func (r *Runner) releaseAll() {
	for _, part := range r.Held() {
		r.release(part)
	}
	r.stops.Wait()
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.cfg.Redis.ZRem(rctx, r.registryKey(), r.cfg.Owner).Err()
}

// listen turns wake-ups published by any process into local wakes. A wake
// lost while the connection is away costs a pass's delay only: the engines
// also run on their own clock.
func (r *Runner) listen(ctx context.Context) {
	conns := pubsub.NewConns(r.cfg.Redis, r.log)
	defer conns.Close()
	for backoff := 200 * time.Millisecond; conns.Subscribe(ctx, WakeChannel(r.cfg.Prefix)) != nil; backoff = min(2*backoff, 5*time.Second) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
	conns.Run(ctx, func(msg any) {
		if m, ok := msg.(*redis.Message); ok {
			if e := r.topo.Load().engines[m.Payload]; e != nil {
				e.Wake()
			}
		}
	}, nil)
}

// reconcileLoop repairs the held partitions' pools and refreshes the
// orphans every ReconcileEvery. An orphan's sweep repairs its own.
func (r *Runner) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.refreshOrphans(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("find orphan partitions", "err", err)
		}
		for _, part := range r.Held() {
			if e := r.topo.Load().engines[part]; e != nil {
				r.repair(ctx, e)
			}
		}
	}
}

// ReconcileResult counts one partition's repairs.
type ReconcileResult struct {
	Added   int // WAITING in the record, missing from the pool
	Removed int // in the pool with no WAITING record
	// Watched counts WAITING tickets in the pool that were missing from its
	// watch set (written by a layout before it), put back into it.
	Watched int
	// Pending counts matches added to (or dropped from) the pending index.
	Pending int
}

// Reconcile repairs an unsharded partition in both directions. The pool is
// read before the record: a join writes the record first, so any pool member
// not WAITING in the later read really was resolved, and is safe to remove.
func Reconcile(ctx context.Context, l matcher.Ledger, p engine.Pool, part matcher.Partition, now time.Time) (ReconcileResult, error) {
	return reconcile(ctx, l, p, nil, part, now)
}

// ReconcileQueue is Reconcile for any pool of queue q, sharded or not.
func ReconcileQueue(ctx context.Context, l matcher.Ledger, p engine.Pool, q *matcher.QueueConfig, part matcher.Partition, now time.Time) (ReconcileResult, error) {
	return reconcile(ctx, l, p, q, part, now)
}

// reconcile repairs one pool. Of a sharded queue's WAITING tickets, a
// sub-pool adds back those whose user hashes to it and that are in none of
// the (queue, region)'s pools (a promoted ticket waits in the overflow
// pool), and the overflow pool adds none; every pool removes its members
// that are not WAITING. The pool that closes the accept windows (the
// (queue, region)'s only or overflow pool) also rebuilds the pending index
// from the record. q nil means an unsharded queue.
func reconcile(ctx context.Context, l matcher.Ledger, p engine.Pool, q *matcher.QueueConfig, part matcher.Partition, now time.Time) (ReconcileResult, error) {
	var res ReconcileResult
	key := part.String()
	pools := []string{key}
	if q != nil {
		pools = pools[:0]
		for _, x := range q.Pools(part.Region) {
			pools = append(pools, x.String())
		}
	}
	members, err := p.Members(ctx, key)
	if err != nil {
		return res, fmt.Errorf("reconcile %s: read pool: %w", key, err)
	}
	// A sub-pool's ticket may wait in the overflow pool, promoted: read
	// after this pool and before the record, so that one promoted since
	// this pool was read is found there. (No other sub-pool holds it.)
	var siblings []string
	elsewhere := map[string]bool{}
	if q != nil && part.Shard != "" && part.Shard != matcher.OverflowShard {
		ov := matcher.Partition{Queue: part.Queue, Region: part.Region, Shard: matcher.OverflowShard}.String()
		siblings = []string{ov}
		es, err := p.Members(ctx, ov)
		if err != nil {
			return res, fmt.Errorf("reconcile %s: read pool %s: %w", key, ov, err)
		}
		for _, e := range es {
			elsewhere[e.TicketID] = true
		}
	}
	waiting, err := l.Waiting(ctx, part.Base())
	if err != nil {
		return res, fmt.Errorf("reconcile %s: read record: %w", key, err)
	}
	inPool := make(map[string]bool, len(members))
	for _, e := range members {
		// A member without the entry's fields is put back as the record
		// has it (Requeue replaces it).
		if e.UserID != "" {
			inPool[e.TicketID] = true
		}
	}
	live := make(map[string]bool, len(waiting))
	var errs []error
	var back []matcher.Entry
	for _, t := range waiting {
		live[t.ID] = true
		if inPool[t.ID] || elsewhere[t.ID] || (q != nil && q.PoolOf(t.UserID, t.Region) != part) {
			continue
		}
		e := matcher.EntryOf(t)
		// The pool's heartbeat died with it: give the player a full timeout
		// to be seen again rather than evicting them as a ghost at once.
		e.Heartbeat = now
		back = append(back, e)
	}
	// A ticket missing from every pool is put back even when its hash says
	// waiting, or claimed by a dead claim (made under an older fence token
	// than the pool's: its owner died or was deposed before the commit, and
	// the record refuses that commit), so that neither a partly lost Redis
	// nor a dead owner keeps it out until the hash expires (the claim's
	// TTL, 30 s). A live owner's claim is left to it (see
	// Pool.RequeueMissing). A sub-pool's requeue is guarded by the overflow
	// pool, in its script: a ticket promoted since that pool was read, or
	// claimed from it (whose owner puts it back there should its commit
	// fail), is left where it is, so that no ticket is ever in two pools.
	for len(back) > 0 {
		n := min(len(back), 500)
		added, err := p.RequeueMissing(ctx, key, siblings, back[:n], matcher.EntryTTL(now, now.Add(time.Hour)), now, matcher.HeartbeatTimeoutOf(q))
		if err != nil {
			errs = append(errs, err)
		}
		res.Added += added
		back = back[n:]
	}
	var kept []matcher.Entry
	for _, e := range members {
		if live[e.TicketID] {
			kept = append(kept, e)
			continue
		}
		// By the entry's member: the stray's hash may be gone.
		if _, err := p.RemoveEntry(ctx, pools, e); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed++
	}
	// A WAITING ticket in the pool but missing from watch would never be
	// looked at by its deadline or its heartbeat (a layout before watch
	// kept them in two other sets, which go).
	n, err := p.Rewatch(ctx, key, kept, matcher.HeartbeatTimeoutOf(q))
	res.Watched = n
	if err != nil {
		errs = append(errs, err)
	}
	if err := p.DropLegacy(ctx, key); err != nil {
		errs = append(errs, err)
	}
	if part.Shard == "" || part.Shard == matcher.OverflowShard {
		n, err := reconcilePending(ctx, l, p, part)
		res.Pending = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("reconcile %s: %w", key, errors.Join(errs...))
	}
	return res, nil
}

// reconcilePending makes the pending index of a (queue, region) equal the
// record's PENDING_ACCEPT matches. The index is read first: a match indexed
// after the record was read is still PENDING_ACCEPT in the record (the
// commit comes before the index), and one dropped meanwhile stays dropped.
func reconcilePending(ctx context.Context, l matcher.Ledger, p engine.Pool, part matcher.Partition) (int, error) {
	base := part.Base().String()
	indexed, err := p.PendingDue(ctx, base, time.Time{}, 0)
	if err != nil {
		return 0, fmt.Errorf("read pending index: %w", err)
	}
	pending, err := l.Pending(ctx, part.Base())
	if err != nil {
		return 0, fmt.Errorf("read pending matches: %w", err)
	}
	inIndex := make(map[string]bool, len(indexed))
	for _, id := range indexed {
		inIndex[id] = true
	}
	open := make(map[string]bool, len(pending))
	var missing []pool.Pending
	for _, m := range pending {
		open[m.ID] = true
		if !inIndex[m.ID] && m.AcceptBy != nil {
			missing = append(missing, pool.Pending{MatchID: m.ID, AcceptBy: *m.AcceptBy})
		}
	}
	if err := p.AddPending(ctx, base, missing...); err != nil {
		return 0, err
	}
	n := len(missing)
	var stale []string
	for _, id := range indexed {
		if !open[id] {
			stale = append(stale, id)
		}
	}
	if err := p.RemovePending(ctx, base, stale...); err != nil {
		return n, err
	}
	return n + len(stale), nil
}
