package notify

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/protocol"
)

// QueueChannel is the pub/sub channel of one admission queue: after each
// admission batch it carries the queue's passed counter (decimal), from
// which every gateway moves its waiters' ranks on without asking Redis
// per waiter (ARCHITECTURE.md §10).
func QueueChannel(prefix, queue string) string { return channel(prefix, "admission", queue) }

// AnnouncerConfig configures an Announcer.
type AnnouncerConfig struct {
	Redis Pipeliner
	// Prefix of the channels. Default "mg".
	Prefix string
	// Timeout bounds one batch's publish. Default 1s.
	Timeout time.Duration
	Logger  *slog.Logger
	Metrics *Metrics
}

// Announcer tells the waiting room of an admission batch: each admitted
// user's admission.ready on the user's channel, then the queue's passed
// counter on the queue's channel, in one pipeline. Pub/sub is at most once:
// a push lost here is made up by the gateway's periodic refresh, which
// finds the place READY in the record, and by a client's poll.
type Announcer struct{ cfg AnnouncerConfig }

// NewAnnouncer builds an Announcer.
func NewAnnouncer(cfg AnnouncerConfig) *Announcer {
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Announcer{cfg: cfg}
}

// Admitted implements admission.Announcer. It never fails the admitter:
// an error is logged.
func (a *Announcer) Admitted(ctx context.Context, queue string, ready []admission.Place, passed int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.Timeout)
	defer cancel()
	pipe, sharded := a.cfg.Redis.Pipeline(), pubsub.Sharded(a.cfg.Redis)
	var buf []byte
	for _, p := range ready {
		buf = protocol.AppendAdmissionReady(buf[:0], queue, p.Token, p.ExpiresAt)
		pubsub.Publish(ctx, pipe, sharded, Channel(a.cfg.Prefix, p.UserID), string(buf))
	}
	pubsub.Publish(ctx, pipe, sharded, QueueChannel(a.cfg.Prefix, queue), strconv.FormatInt(passed, 10))
	if _, err := pipe.Exec(ctx); err != nil {
		a.cfg.Logger.Warn("announce an admission batch", "queue", queue, "admitted", len(ready), "err", err)
		if a.cfg.Metrics != nil {
			a.cfg.Metrics.failures.Inc()
		}
		return
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.published.WithLabelValues("admission").Add(float64(len(ready) + 1))
	}
}
