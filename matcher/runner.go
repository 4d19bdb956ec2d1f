package matcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/matcher/pool"
)

// RunnerConfig configures the matcher role of a process.
type RunnerConfig struct {
	Queues   Config // normalized
	Pool     *pool.Pool
	Ledger   Ledger
	Notifier Notifier
	// Redis carries wake-ups between processes (a join on one gateway wakes
	// the engines of every matcher process). Nil: wake-ups stay in-process.
	Redis redis.UniversalClient
	// WakeChannel is the pub/sub channel of wake-ups. Default "mg:wake".
	WakeChannel string
	// ReconcileEvery is the period of the record↔pool repair. Default 10s.
	ReconcileEvery time.Duration
	Now            func() time.Time
	Logger         *slog.Logger
	Metrics        *Metrics
}

// Runner runs one Engine per partition, the wake-up listener and the
// reconciler.
type Runner struct {
	cfg     RunnerConfig
	engines map[string]*Engine
	log     *slog.Logger
}

// NewRunner builds the engines; it starts nothing.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.WakeChannel == "" {
		cfg.WakeChannel = "mg:wake"
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
	r := &Runner{cfg: cfg, engines: map[string]*Engine{}, log: cfg.Logger}
	for i := range cfg.Queues.Queues {
		q := cfg.Queues.Queues[i]
		for _, region := range q.Regions {
			e, err := NewEngine(EngineConfig{
				Queue: q, Region: region, Pool: cfg.Pool, Ledger: cfg.Ledger, Notifier: cfg.Notifier,
				Now: cfg.Now, Logger: cfg.Logger, Metrics: cfg.Metrics,
			})
			if err != nil {
				return nil, err
			}
			r.engines[e.part] = e
		}
	}
	return r, nil
}

// Engine returns the engine of a partition, or nil.
func (r *Runner) Engine(p Partition) *Engine { return r.engines[p.String()] }

// Wake asks the partition's engine in this process for a pass now.
func (r *Runner) Wake(p Partition) {
	if e := r.engines[p.String()]; e != nil {
		e.Wake()
	}
}

// Run runs every engine, the wake-up listener and the reconciler until ctx
// ends, and returns once all of them have stopped.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, e := range r.engines {
		wg.Go(func() { _ = e.Run(ctx) })
	}
	if r.cfg.Redis != nil {
		wg.Go(func() { r.listen(ctx) })
	}
	wg.Go(func() { r.reconcileLoop(ctx) })
	wg.Wait()
	return nil
}

// listen turns wake-ups published by other processes into local wakes.
func (r *Runner) listen(ctx context.Context) {
	ps := r.cfg.Redis.Subscribe(ctx, r.cfg.WakeChannel)
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
		if e := r.engines[msg.Payload]; e != nil {
			e.Wake()
		}
	}
}

// PublishWake tells every matcher process that a partition has news.
func PublishWake(ctx context.Context, rdb redis.UniversalClient, channel string, p Partition) error {
	if channel == "" {
		channel = "mg:wake"
	}
	return rdb.Publish(ctx, channel, p.String()).Err()
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
		for _, e := range r.engines {
			if _, err := Reconcile(ctx, r.cfg.Ledger, r.cfg.Pool, e.Partition(), r.cfg.Now()); err != nil && ctx.Err() == nil {
				r.log.Warn("reconcile", "partition", e.part, "err", err)
			}
		}
	}
}

// ReconcileResult counts one partition's repairs.
type ReconcileResult struct {
	Added   int // WAITING in the record, missing from the pool
	Removed int // in the pool with no WAITING record
}

// Reconcile repairs a partition in both directions. The pool is read before
// the record: a join writes the record first, so any pool member not WAITING
// in the later read really was resolved, and is safe to remove.
func Reconcile(ctx context.Context, l Ledger, p *pool.Pool, part Partition, now time.Time) (ReconcileResult, error) {
	var res ReconcileResult
	key := part.String()
	members, err := p.Members(ctx, key)
	if err != nil {
		return res, fmt.Errorf("reconcile %s: read pool: %w", key, err)
	}
	waiting, err := l.Waiting(ctx, part)
	if err != nil {
		return res, fmt.Errorf("reconcile %s: read record: %w", key, err)
	}
	inPool := make(map[string]bool, len(members))
	for _, id := range members {
		inPool[id] = true
	}
	live := make(map[string]bool, len(waiting))
	var errs []error
	for _, t := range waiting {
		live[t.ID] = true
		if inPool[t.ID] {
			continue
		}
		// Enqueue is idempotent: a ticket claimed a moment ago keeps its
		// claimed hash and is left alone; its claim's commit decides.
		added, err := p.Enqueue(ctx, key, EntryOf(t), entryTTL(now, t.Deadline))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if added {
			res.Added++
		}
	}
	for _, id := range members {
		if live[id] {
			continue
		}
		if _, err := p.Remove(ctx, key, id); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed++
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("reconcile %s: %w", key, errors.Join(errs...))
	}
	return res, nil
}
