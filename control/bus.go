package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
)

// Operations on the control channel.
const (
	// OpBan: Ban was stored; every gateway adds it to its list and closes
	// the user's sockets (4403).
	OpBan = "ban"
	// OpUnban: the ban of User was lifted.
	OpUnban = "unban"
	// OpDisconnect: every gateway closes User's sockets (4000).
	OpDisconnect = "disconnect"
	// OpDrain: the gateway named Node drains (readiness fails, sockets close
	// with 1001 in batches, upgrades are refused).
	OpDrain = "drain"
	// OpQueues: the queue overrides changed; check now.
	OpQueues = "queues"
	// OpResync is never published: Run hands it to the handler when the
	// subscription came back after a failure, since messages published
	// meanwhile were lost (reload what is stored).
	OpResync = "resync"
)

// Message is one control-channel message.
type Message struct {
	Op   string `json:"op"`
	User string `json:"user,omitempty"`
	Node string `json:"node,omitempty"`
	Ban  *Ban   `json:"ban,omitempty"`
}

// BusConfig configures a Bus.
type BusConfig struct {
	// Redis carries the channel. Required.
	Redis redis.UniversalClient
	// Prefix of the channel. Default "mg".
	Prefix string
	Logger *slog.Logger
}

// Bus is the control channel every process listens to.
type Bus struct {
	cfg BusConfig
}

// NewBus builds a Bus; it starts nothing.
func NewBus(cfg BusConfig) (*Bus, error) {
	if cfg.Redis == nil {
		return nil, errors.New("control: BusConfig.Redis is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Bus{cfg: cfg}, nil
}

// Channel is the pub/sub channel: <prefix>:control.
func (b *Bus) Channel() string { return b.cfg.Prefix + ":control" }

// Publish sends m to every process (this one included).
func (b *Bus) Publish(ctx context.Context, m Message) error {
	p, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("control %s: %w", m.Op, err)
	}
	if err := pubsub.Publish(ctx, b.cfg.Redis, pubsub.Sharded(b.cfg.Redis), b.Channel(), p).Err(); err != nil {
		return fmt.Errorf("control %s: %w", m.Op, err)
	}
	return nil
}

// maxControlMessage bounds what Run decodes: anything larger did not come
// from Publish.
const maxControlMessage = 4 << 10

// Run subscribes and hands every message to handle, one at a time, until
// ctx ends. handle must not block for long. A subscription that comes back
// after a failure is reported as an OpResync message. ready, when not nil,
// is closed once the first subscription is confirmed.
func (b *Bus) Run(ctx context.Context, handle func(Message), ready chan<- struct{}) error {
	conns := pubsub.NewConns(b.cfg.Redis, b.cfg.Logger)
	defer conns.Close()
	// A failed first subscribe is retried like a lost connection: the bus
	// must come up once Redis does.
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := conns.Subscribe(ctx, b.Channel())
		if err == nil {
			break
		}
		b.cfg.Logger.Warn("control channel: subscribe failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
	// Messages come from the one connection that holds the channel, one at
	// a time; a subscription confirmed again (after a failure or a move) is
	// reported as OpResync.
	subscribed := false
	conns.Run(ctx, func(msg any) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if !pubsub.Confirms(m) {
				return
			}
			if subscribed {
				handle(Message{Op: OpResync})
			} else if ready != nil {
				close(ready)
			}
			subscribed = true
		case *redis.Message:
			if len(m.Payload) > maxControlMessage {
				b.cfg.Logger.Warn("control channel: oversized message dropped", "bytes", len(m.Payload))
				return
			}
			var cm Message
			if err := json.Unmarshal([]byte(m.Payload), &cm); err != nil || cm.Op == "" || cm.Op == OpResync {
				b.cfg.Logger.Warn("control channel: malformed message dropped", "err", err)
				return
			}
			handle(cm)
		}
	}, nil)
	return nil
}
