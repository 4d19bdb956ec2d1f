package lease

import (
	"context"
	"log/slog"
	"sync"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/matcher"
	"github.com/redis/go-redis/v9"
)

// Wakes publishes wake-ups for partitions whose matcher runs in another
// process. A join must not wait for a publish, and a burst of joins to one
// partition needs one wake, not one each: Wake only marks the partition, and
// Run publishes every marked partition in one round trip, then whatever was
// marked meanwhile, and so on. Coalescing drops no wake: one that arrives
// while a publish is in flight is sent by the next. (A publish that fails
// is not retried: that costs the partition one tick.)
type Wakes struct {
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{}
}

// NewWakes publishes on WakeChannel(prefix); log may be nil.
func NewWakes(rdb redis.UniversalClient, prefix string, log *slog.Logger) *Wakes {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Wakes{rdb: rdb, prefix: prefix, log: log, pending: map[string]struct{}{}, signal: make(chan struct{}, 1)}
}

// Wake marks p for the next publish. It never blocks.
func (w *Wakes) Wake(p matcher.Partition) {
	w.mu.Lock()
	w.pending[p.String()] = struct{}{}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Run publishes marked partitions until ctx ends. A failed publish is
// logged and not retried: losing a wake costs the partition one tick.
func (w *Wakes) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.signal:
		}
		w.mu.Lock()
		parts := w.pending
		w.pending = make(map[string]struct{}, len(parts))
		w.mu.Unlock()
		if len(parts) == 0 {
			continue
		}
		pipe, sharded := w.rdb.Pipeline(), pubsub.Sharded(w.rdb)
		for p := range parts {
			pubsub.Publish(ctx, pipe, sharded, WakeChannel(w.prefix), p)
		}
		if _, err := pipe.Exec(ctx); err != nil && ctx.Err() == nil {
			w.log.Debug("publish wakes", "partitions", len(parts), "err", err)
		}
	}
}
