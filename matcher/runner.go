package matcher

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

	"github.com/matchgate/matchgate/matcher/pool"
)

// RunnerConfig configures the matcher role of a process.
type RunnerConfig struct {
	Queues   Config // normalized
	Pool     *pool.Pool
	Ledger   Ledger
	Notifier Notifier
	Presence Presence
	// Allocator hands out the servers of the matches the engines form; nil
	// forms matches without a server.
	Allocator Allocator
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
	// one LeaseTTL. Default 10s.
	LeaseTTL time.Duration
	// ReconcileEvery is the period of the record↔pool repair. Default 10s.
	ReconcileEvery time.Duration
	Now            func() time.Time
	Logger         *slog.Logger
	Metrics        *Metrics
}

// Runner is the matcher role of a process: it takes a fair share of the
// partitions' leases, runs one Engine per partition it holds, and reconciles
// those partitions. Several Runners in several processes share the
// partitions through the leases.
type Runner struct {
	cfg   RunnerConfig
	topo  atomic.Pointer[topology]
	setMu sync.Mutex // serialises SetQueues
	log   *slog.Logger

	mu   sync.Mutex
	held map[string]*holding
}

// holding is one partition this runner owns.
type holding struct {
	token      int64
	validUntil atomic.Int64 // unix ms; past it the engine stops claiming
	cancel     context.CancelFunc
	done       chan struct{}
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
		cfg.LeaseTTL = 10 * time.Second
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
	t, _, err := r.build(cfg.Queues, &topology{engines: map[string]*Engine{}})
	if err != nil {
		return nil, err
	}
	r.topo.Store(t)
	return r, nil
}

// topology is the set of engines in force, swapped whole by SetQueues.
type topology struct {
	engines map[string]*Engine
	order   []string
}

// build makes the topology of c, reusing old's engines whose queue is
// unchanged. Partitions of old that c no longer has keep their engines, so
// the tickets still waiting there are matched or resolved by their
// deadline; the Service takes no new joins for them. changed lists the
// partitions whose engine was replaced.
func (r *Runner) build(c Config, old *topology) (t *topology, changed []string, err error) {
	t = &topology{engines: map[string]*Engine{}}
	for i := range c.Queues {
		q := c.Queues[i]
		for _, region := range q.Regions {
			for _, p := range q.Pools(region) {
				part := p.String()
				if e := old.engines[part]; e != nil && reflect.DeepEqual(e.cfg.Queue, q) {
					t.engines[part] = e
					t.order = append(t.order, part)
					continue
				}
				e, err := NewEngine(EngineConfig{
					Queue: q, Region: region, Shard: p.Shard, Pool: r.cfg.Pool, Ledger: r.cfg.Ledger,
					Notifier: r.cfg.Notifier, Allocator: r.cfg.Allocator,
					Presence: r.cfg.Presence, Fence: func() int64 { return r.fence(part) },
					Now: r.cfg.Now, Logger: r.cfg.Logger, Metrics: r.cfg.Metrics,
				})
				if err != nil {
					return nil, nil, err
				}
				if old.engines[part] != nil {
					changed = append(changed, part)
				}
				t.engines[part] = e
				t.order = append(t.order, part)
			}
		}
	}
	for _, part := range old.order {
		if t.engines[part] == nil {
			t.engines[part] = old.engines[part]
			t.order = append(t.order, part)
		}
	}
	return t, changed, nil
}

// SetQueues puts a new (normalized) queue configuration in force without a
// restart: new partitions are taken up by the lease loop, a partition whose
// queue changed is released and taken up again with its new engine (here
// or by another matcher), and a removed queue's partitions keep running
// until restart so that no waiting ticket is stranded.
func (r *Runner) SetQueues(c Config) error {
	r.setMu.Lock()
	defer r.setMu.Unlock()
	t, changed, err := r.build(c, r.topo.Load())
	if err != nil {
		return fmt.Errorf("set queues: %w", err)
	}
	r.topo.Store(t)
	for _, part := range changed {
		r.release(context.Background(), part)
	}
	return nil
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
	if h == nil || time.Now().UnixMilli() >= h.validUntil.Load() {
		return 0
	}
	return h.token
}

// Held lists the partitions this runner owns now.
func (r *Runner) Held() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.held))
	for p := range r.held {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Wake asks the partition's engine for a pass now, if this runner owns it,
// and reports whether it does.
func (r *Runner) Wake(p Partition) bool {
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

// leaseRound renews what is held, gives up what exceeds a fair share, and
// takes free partitions up to it. The fair share is ceil(partitions / live
// matchers), the live matchers being those that registered within a TTL.
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

	for _, part := range r.Held() {
		r.mu.Lock()
		h := r.held[part]
		r.mu.Unlock()
		start := time.Now()
		ok, err := r.cfg.Pool.RenewLease(ctx, part, r.cfg.Owner, h.token, ttl)
		switch {
		case err != nil:
			// Unknown: keep working until the lease would have expired;
			// the fence refuses anything after.
			if time.Now().UnixMilli() >= h.validUntil.Load() {
				r.drop(part, "lease unconfirmed past its expiry")
			}
		case !ok:
			r.drop(part, "lease lost")
		default:
			h.validUntil.Store(start.Add(ttl).UnixMilli())
		}
	}

	held := r.Held()
	for i := share; i < len(held); i++ {
		r.release(ctx, held[i])
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
		r.acquire(ctx, part)
	}
}

func hash32(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func (r *Runner) isHeld(part string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[part] != nil
}

// acquire takes a free partition: the Redis lease with a token above the
// recorded epoch, then the record's epoch (which waits out, and from then on
// refuses, the commits of any previous owner), then a reconciliation so the
// new owner starts from the record's truth, then the engine.
func (r *Runner) acquire(ctx context.Context, part string) {
	floor, err := r.cfg.Ledger.LeaseEpoch(ctx, part)
	if err != nil {
		r.log.Warn("read lease epoch", "partition", part, "err", err)
		return
	}
	start := time.Now()
	token, err := r.cfg.Pool.AcquireLease(ctx, part, r.cfg.Owner, r.cfg.LeaseTTL, floor)
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
	e := r.topo.Load().engines[part]
	if e == nil {
		return
	}
	engCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &holding{token: token, cancel: cancel, done: make(chan struct{})}
	h.validUntil.Store(start.Add(r.cfg.LeaseTTL).UnixMilli())
	r.mu.Lock()
	r.held[part] = h
	r.mu.Unlock()
	r.cfg.Metrics.lease(part, "acquired")
	r.log.Info("partition acquired", "partition", part, "token", token)
	// The reconciliation runs in the engine's goroutine, with the lease
	// already registered, so the lease loop keeps renewing every partition
	// while a large one is being rebuilt.
	go func() {
		defer close(h.done)
		if _, err := reconcile(engCtx, r.cfg.Ledger, r.cfg.Pool, e.q, e.Partition(), r.cfg.Now()); err != nil && engCtx.Err() == nil {
			r.log.Warn("reconcile on takeover", "partition", part, "err", err)
		}
		e.Wake()
		_ = e.Run(engCtx)
	}()
}

// drop stops working a partition whose lease is gone, at once.
func (r *Runner) drop(part, why string) {
	h := r.forget(part)
	if h == nil {
		return
	}
	h.validUntil.Store(0)
	h.cancel()
	<-h.done
	r.cfg.Metrics.lease(part, "lost")
	r.log.Warn("partition lost", "partition", part, "token", h.token, "why", why)
}

// release stops the partition's engine (its pass finishes) and frees the
// lease for another matcher.
func (r *Runner) release(ctx context.Context, part string) {
	h := r.forget(part)
	if h == nil {
		return
	}
	h.cancel()
	<-h.done
	h.validUntil.Store(0)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := r.cfg.Pool.ReleaseLease(rctx, part, r.cfg.Owner, h.token); err != nil {
		r.log.Warn("release lease", "partition", part, "err", err)
	}
	r.cfg.Metrics.lease(part, "released")
	r.log.Info("partition released", "partition", part, "token", h.token)
}

func (r *Runner) forget(part string) *holding {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[part]
	delete(r.held, part)
	return h
}

func (r *Runner) releaseAll() {
	ctx := context.Background()
	for _, part := range r.Held() {
		r.release(ctx, part)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = r.cfg.Redis.ZRem(rctx, r.registryKey(), r.cfg.Owner).Err()
}

// listen turns wake-ups published by any process into local wakes.
func (r *Runner) listen(ctx context.Context) {
	ps := r.cfg.Redis.Subscribe(ctx, WakeChannel(r.cfg.Prefix))
	// A blocked receive does not watch its context; closing the connection
	// is what ends it.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	defer ps.Close()
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// go-redis reconnects and resubscribes on the next receive.
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if e := r.topo.Load().engines[msg.Payload]; e != nil {
			e.Wake()
		}
	}
}

func (r *Runner) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, part := range r.Held() {
			e := r.topo.Load().engines[part]
			if _, err := reconcile(ctx, r.cfg.Ledger, r.cfg.Pool, e.q, e.Partition(), r.cfg.Now()); err != nil && ctx.Err() == nil {
				r.log.Warn("reconcile", "partition", part, "err", err)
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
func Reconcile(ctx context.Context, l Ledger, p *pool.Pool, part Partition, now time.Time) (ReconcileResult, error) {
	return reconcile(ctx, l, p, nil, part, now)
}

// ReconcileQueue is Reconcile for any pool of queue q, sharded or not.
func ReconcileQueue(ctx context.Context, l Ledger, p *pool.Pool, q *QueueConfig, part Partition, now time.Time) (ReconcileResult, error) {
	return reconcile(ctx, l, p, q, part, now)
}

// reconcile repairs one pool. Of a sharded queue's WAITING tickets, a
// sub-pool adds back those whose user hashes to it (a ticket already in the
// overflow pool keeps its hash there, so the idempotent enqueue leaves it
// alone), and the overflow pool adds none; every pool removes its members
// that are not WAITING. The pool that closes the accept windows (the
// (queue, region)'s only or overflow pool) also rebuilds the pending index
// from the record. q nil means an unsharded queue.
func reconcile(ctx context.Context, l Ledger, p *pool.Pool, q *QueueConfig, part Partition, now time.Time) (ReconcileResult, error) {
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
	var back []pool.Entry
	for _, t := range waiting {
		live[t.ID] = true
		if inPool[t.ID] || (q != nil && q.PoolOf(t.UserID, t.Region) != part) {
			continue
		}
		e := EntryOf(t)
		// The pool's heartbeat died with it: give the player a full timeout
		// to be seen again rather than evicting them as a ghost at once.
		e.Heartbeat = now
		if q == nil {
			back = append(back, e)
			continue
		}
		// A sharded queue's ticket may live in the overflow pool, whose
		// hash the idempotent enqueue leaves alone.
		added, err := p.Enqueue(ctx, key, e, entryTTL(now, t.Deadline), q.HeartbeatTimeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if added {
			res.Added++
		}
	}
	// An unsharded ticket missing from its pool is put back even when its
	// hash says claimed or waiting: a claim whose owner died before the
	// commit, or a partly lost Redis, must not keep it out until the hash
	// expires. Should a live claim be about to commit, the record's
	// compare-and-set still lets only one match have the ticket.
	for len(back) > 0 {
		n := min(len(back), 500)
		added, err := p.Requeue(ctx, key, back[:n], entryTTL(now, now.Add(time.Hour)), now, heartbeatTimeout(q))
		if err != nil {
			errs = append(errs, err)
		}
		res.Added += added
		back = back[n:]
	}
	var kept []pool.Entry
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
	n, err := p.Rewatch(ctx, key, kept, heartbeatTimeout(q))
	res.Watched = n
	if err != nil {
		errs = append(errs, err)
	}
	if err := p.DropLegacy(ctx, key); err != nil {
		errs = append(errs, err)
	}
	if part.Shard == "" || part.Shard == OverflowShard {
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
func reconcilePending(ctx context.Context, l Ledger, p *pool.Pool, part Partition) (int, error) {
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
