// Package clock is the one clock of a matchgate deployment's decisions.
//
// Every process of a deployment talks to the same Redis, so the Redis
// server's TIME is the authority: a ticket's enqueue time and deadline, an
// accept window and the accept that races it, a ghost check against a
// presence record written by another gateway, a partition lease registry,
// a socket lease and a ban's expiry are all judged on it, whichever
// process stamps and whichever judges. The embedded default's in-process
// Redis answers TIME from the process clock, which is then the only clock.
//
// A Synced samples TIME at start and every Every after (Run), estimates the
// offset of the authority from the process's monotonic clock at the
// round-trip midpoint of the quickest of a few samples, and answers Now as
// the monotonic clock plus that offset. The first sample steps the offset;
// later corrections are slewed (spread over time at a bounded rate), so Now
// never goes backwards and a window never jumps. A failed sample keeps the
// last offset and is logged.
//
// The outbox's age is the one time the authority does not judge: the record
// stamps its events and compares their age with its own clock (PostgreSQL's
// now(), see matcher/ledger), so no two clocks meet there either.
package clock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Source reads the authority's time.
type Source func(ctx context.Context) (time.Time, error)

// RedisTime is the Redis server's TIME.
func RedisTime(rdb redis.UniversalClient) Source {
	return func(ctx context.Context) (time.Time, error) {
		t, err := rdb.Time(ctx).Result()
		if err != nil {
			return time.Time{}, fmt.Errorf("redis TIME: %w", err)
		}
		return t, nil
	}
}

// Config configures a Synced.
type Config struct {
	// Source is the authority. Required.
	Source Source
	// Every is the period of Run's samples. Default 15s.
	Every time.Duration
	// Samples is how many round trips a sync makes; the quickest decides.
	// Default 3.
	Samples int
	// Timeout bounds one sync. Default 2s.
	Timeout time.Duration
	// Skew shifts the local clock (for fault-injection tests: a synchronized
	// clock cancels it out).
	Skew time.Duration
	// Local is the process clock. Default time.Now (its monotonic reading is
	// what Now advances by).
	Local   func() time.Time
	Logger  *slog.Logger
	Metrics prometheus.Registerer
}

// slewRate is the fraction of elapsed time by which a later correction
// moves the offset: 1 ms per 20 ms, so a correction of a second takes 20 s
// and time, as Now tells it, runs at 95–105 % of its pace meanwhile.
const slewRate = 20

// Synced is the authority's time, as estimated by this process. It is safe
// for concurrent use.
type Synced struct {
	cfg  Config
	base time.Time // Local at New: Now advances from it by the monotonic clock
	log  *slog.Logger

	offsetGauge prometheus.Gauge
	failures    prometheus.Counter

	mu     sync.Mutex
	synced bool
	// The offset is from (at local elapsed `since`) and slews toward target.
	from, target time.Duration
	since        time.Duration
	last         int64 // the latest Now, unix ns: Now never returns less
}

// New builds a Synced that, until its first sync, tells the local clock
// shifted by Skew. It starts nothing.
func New(cfg Config) *Synced {
	if cfg.Every <= 0 {
		cfg.Every = 15 * time.Second
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 3
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Local == nil {
		cfg.Local = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Synced{cfg: cfg, base: cfg.Local(), log: cfg.Logger}
	if cfg.Metrics != nil {
		c.offsetGauge = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "matchgate_clock_offset_seconds", Help: "Estimated offset of the Redis server's TIME from this process's clock.",
		})
		c.failures = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_clock_sync_errors_total", Help: "Clock synchronizations that failed (the last offset is kept).",
		})
		cfg.Metrics.MustRegister(c.offsetGauge, c.failures)
	}
	return c
}

// elapsed is the local monotonic time since New.
func (c *Synced) elapsed() time.Duration { return c.cfg.Local().Sub(c.base) }

// local is this process's (skewed) wall time at elapsed e.
func (c *Synced) local(e time.Duration) time.Time { return c.base.Add(e + c.cfg.Skew).Round(0) }

// offsetAt is the offset in force at elapsed e; c.mu is held.
func (c *Synced) offsetAt(e time.Duration) time.Duration {
	d := c.target - c.from
	step := max(e-c.since, 0) / slewRate
	switch {
	case d > step:
		return c.from + step
	case d < -step:
		return c.from - step
	}
	return c.target
}

// Now is the authority's time as estimated here. It never goes backwards.
func (c *Synced) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.elapsed()
	n := c.local(e).Add(c.offsetAt(e)).UnixNano()
	if n < c.last {
		n = c.last
	}
	c.last = n
	return time.Unix(0, n).UTC()
}

// Offset is the offset in force: the authority's time minus this process's
// (skewed) clock.
func (c *Synced) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offsetAt(c.elapsed())
}

// Sync samples the authority and corrects the offset: at once the first
// time, slewed after. On failure the offset stays as it was.
func (c *Synced) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var best, rtt time.Duration
	var lastErr error
	ok := false
	for range c.cfg.Samples {
		t0 := c.elapsed()
		at, err := c.cfg.Source(ctx)
		t1 := c.elapsed()
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if r := t1 - t0; !ok || r < rtt {
			ok, rtt = true, r
			best = at.Sub(c.local(t0 + r/2))
		}
	}
	if !ok {
		if c.failures != nil {
			c.failures.Inc()
		}
		return fmt.Errorf("clock sync: %w", lastErr)
	}
	c.mu.Lock()
	e := c.elapsed()
	if c.synced {
		c.from = c.offsetAt(e)
	} else {
		c.from = best
	}
	c.target, c.since, c.synced = best, e, true
	c.mu.Unlock()
	if c.offsetGauge != nil {
		c.offsetGauge.Set(best.Seconds())
	}
	c.log.Debug("clock synchronized", "offset", best, "round_trip", rtt)
	return nil
}

// Run syncs every Every until ctx ends, logging failures (the last offset
// stays in force meanwhile).
func (c *Synced) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("clock sync failed; keeping the last offset", "err", err, "offset", c.Offset())
		}
	}
}

// Fixed is a clock for tests: it tells the time it is set to.
type Fixed struct {
	mu sync.Mutex
	t  time.Time
}

// NewFixed returns a Fixed clock at t.
func NewFixed(t time.Time) *Fixed { return &Fixed{t: t} }

// Now is the set time.
func (f *Fixed) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

// Advance moves the clock by d.
func (f *Fixed) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}
