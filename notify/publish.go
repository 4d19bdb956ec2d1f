package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/protocol"
)

// Channel is the pub/sub channel of one user.
func Channel(prefix, userID string) string { return channel(prefix, "user", userID) }

// channel is a pub/sub channel of the prefix (default "mg").
func channel(prefix, kind, name string) string {
	if prefix == "" {
		prefix = "mg"
	}
	return prefix + ":" + kind + ":" + name
}

// Metrics of the notify package; nil records nothing.
type Metrics struct {
	published *prometheus.CounterVec
	failures  prometheus.Counter
	relayed   prometheus.Counter
	lag       prometheus.Histogram
	dropped   prometheus.Counter
}

// NewMetrics registers the collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matchgate_pubsub_published_total", Help: "Frames published, by path (direct or relay: user channels; admission: an admission batch's pushes and counter).",
		}, []string{"path"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_pubsub_publish_errors_total", Help: "Publishes that failed (left to the relay).",
		}),
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_relay_events_total", Help: "Outbox events published by the relay sweep.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "matchgate_outbox_lag_seconds", Help: "Age of an outbox event when the relay published it.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 10),
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matchgate_pubsub_undeliverable_total", Help: "Received frames with no local subscriber.",
		}),
	}
	reg.MustRegister(m.published, m.failures, m.relayed, m.lag, m.dropped)
	return m
}

// Pipeliner is all publishing asks of Redis: a pipeline, so that a batch of
// frames costs one round trip. Every go-redis client is one.
type Pipeliner interface {
	Pipeline() redis.Pipeliner
}

// Acknowledger deletes the outbox rows of events the Publisher delivered, so
// that the relay does not publish them again. matcher.Ledger is one.
type Acknowledger interface {
	DeleteEvents(ctx context.Context, ids []int64) error
}

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	Redis  Pipeliner
	Outbox Acknowledger
	// Prefix of user channels. Default "mg".
	Prefix string
	// AckEvery batches the deletion of delivered outbox rows. Default 20ms.
	AckEvery time.Duration
	Logger   *slog.Logger
	Metrics  *Metrics
}

// Publisher publishes committed events at once and deletes their outbox rows
// in batches. What it fails to publish stays in the outbox for the relay.
type Publisher struct {
	cfg  PublisherConfig
	mu   sync.Mutex
	acks []int64
	kick chan struct{}
}

// NewPublisher builds a Publisher; Run must run for acknowledgements to be
// written.
func NewPublisher(cfg PublisherConfig) *Publisher {
	if cfg.AckEvery == 0 {
		cfg.AckEvery = 20 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{cfg: cfg, kick: make(chan struct{}, 1)}
}

// Deliver publishes every event to each of its users' channels in one
// pipeline and queues the delivered rows for deletion.
func (p *Publisher) Deliver(ctx context.Context, events []matcher.Event) {
	if err := publish(ctx, p.cfg.Redis, p.cfg.Prefix, events); err != nil {
		p.cfg.Logger.Warn("direct publish failed; the relay will retry", "events", len(events), "err", err)
		if p.cfg.Metrics != nil {
			p.cfg.Metrics.failures.Inc()
		}
		return
	}
	if p.cfg.Metrics != nil {
		p.cfg.Metrics.published.WithLabelValues("direct").Add(float64(len(events)))
	}
	p.mu.Lock()
	for _, e := range events {
		if e.ID != 0 {
			p.acks = append(p.acks, e.ID)
		}
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func publish(ctx context.Context, rdb Pipeliner, prefix string, events []matcher.Event) error {
	pipe, sharded := rdb.Pipeline(), pubsub.Sharded(rdb)
	n := 0
	for _, e := range events {
		// Rendered once per event, whatever its number of users: the
		// gateways pass the frame on to the sockets as it is.
		frame := protocol.Frame(e)
		if frame == nil {
			continue // no kind this version renders: nothing to push
		}
		// The provider of a provider queue's match is told of it as its
		// assignment, not as a player of the match.
		var seat string
		var assignment []byte
		if e.Match.Provider != nil {
			seat, assignment = e.Match.Provider.UserID, protocol.ProviderFrame(e)
		}
		for _, u := range e.Users {
			f := frame
			if u == seat && assignment != nil {
				f = assignment
			}
			pubsub.Publish(ctx, pipe, sharded, Channel(prefix, u), f)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %d frames: %w", n, err)
	}
	return nil
}

// Run writes acknowledgements (outbox deletions) in batches until ctx ends,
// then flushes what is left.
func (p *Publisher) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			p.flush(ctx)
			return nil
		case <-p.kick:
		}
		p.flush(ctx)
		// Batch: let more acknowledgements gather before the next write.
		select {
		case <-ctx.Done():
		case <-time.After(p.cfg.AckEvery):
		}
	}
}

// flush deletes the acknowledged rows. It is not cut short by shutdown: an
// acknowledgement lost there would only cost a repeated push, but a clean
// stop should leave nothing behind.
func (p *Publisher) flush(parent context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 2*time.Second)
	defer cancel()
	p.mu.Lock()
	ids := p.acks
	p.acks = nil
	p.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := p.cfg.Outbox.DeleteEvents(ctx, ids); err != nil {
		// Harmless: the relay publishes them again (at least once).
		p.cfg.Logger.Warn("delete delivered outbox rows", "events", len(ids), "err", err)
	}
}
