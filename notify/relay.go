package notify

import (
	"context"
	"log/slog"
	"time"

	"github.com/matchgate/matchgate/matcher"
)

// Outbox hands the relay the committed events that are still undelivered,
// each to one drain at a time. matcher.Ledger is one.
type Outbox interface {
	DrainOutbox(ctx context.Context, minAge time.Duration, limit int, fn func([]matcher.Event) error) (int, error)
}

// RelayConfig configures the outbox relay.
type RelayConfig struct {
	Redis  Pipeliner
	Outbox Outbox
	// Prefix of user channels. Default "mg".
	Prefix string
	// Every is the sweep period. Default 1s.
	Every time.Duration
	// Grace is how old an event must be before the relay takes it, so it does
	// not race the direct publish right after the commit. Default 2s. The
	// outbox judges the age by the clock that stamped the event (see
	// matcher.Ledger's DrainOutbox), so the relay's clock plays no part.
	Grace time.Duration
	// Batch is the number of events per drain. Default 500.
	Batch int
	// Now is the clock of the lag metric only (which so includes any offset
	// between it and the ledger's). Default time.Now.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// Relay publishes outbox events that the direct path did not (a crash
// between commit and publish, a Redis outage). Any number of relays may run:
// the outbox hands each event to one drain at a time.
type Relay struct{ cfg RelayConfig }

// NewRelay builds a Relay; it starts nothing.
func NewRelay(cfg RelayConfig) *Relay {
	if cfg.Every == 0 {
		cfg.Every = time.Second
	}
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.Batch == 0 {
		cfg.Batch = 500
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Relay{cfg: cfg}
}

// Run sweeps until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
		}
		if _, err := r.Sweep(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			backoff = min(max(2*backoff, r.cfg.Every), 30*time.Second)
			r.cfg.Logger.Warn("outbox sweep failed", "err", err, "retry_in", backoff)
			continue
		}
		backoff = 0
	}
}

// Sweep drains the outbox once, batch after batch, and returns how many
// events it published.
func (r *Relay) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		now := r.cfg.Now()
		n, err := r.cfg.Outbox.DrainOutbox(ctx, r.cfg.Grace, r.cfg.Batch, func(events []matcher.Event) error {
			if err := publish(ctx, r.cfg.Redis, r.cfg.Prefix, events); err != nil {
				return err
			}
			if m := r.cfg.Metrics; m != nil {
				m.relayed.Add(float64(len(events)))
				m.published.WithLabelValues("relay").Add(float64(len(events)))
				for _, e := range events {
					m.lag.Observe(now.Sub(e.CreatedAt).Seconds())
				}
			}
			return nil
		})
		total += n
		if err != nil || n < r.cfg.Batch {
			return total, err
		}
	}
}
