package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
)

// PubSubOpener opens the Hub's shared pub/sub connection. Every go-redis
// client is one; a cluster client gets one sharded connection per master
// (internal/pubsub).
type PubSubOpener = pubsub.Opener

// HubConfig configures a Hub.
type HubConfig struct {
	Redis PubSubOpener
	// Prefix of user channels. Default "mg".
	Prefix string
	// ConfirmTimeout bounds how long Subscribe waits for Redis to confirm.
	// Default 3s.
	ConfirmTimeout time.Duration
	// OnResubscribe is called (in its own goroutine) when the shared
	// connection comes back after a failure and its channels are subscribed
	// again: frames published meanwhile are lost to it, so the gateway
	// resends its players' state.
	OnResubscribe func()
	Logger        *slog.Logger
	Metrics       *Metrics
}

type subscriber struct {
	deliver func([]byte)
}

// Hub multiplexes the channels of every user held by this gateway over one
// pub/sub connection (on a cluster, one per master). Messages are read by one goroutine (Run) straight from
// the connection and handed to the subscribers' non-blocking deliver
// functions, so no library buffer sits in between to overflow.
type Hub struct {
	cfg   HubConfig
	conns *pubsub.Conns

	mu      sync.Mutex
	subs    map[string][]*subscriber // channel → subscribers
	waiters map[string][]chan struct{}

	// opMu orders SUBSCRIBE and UNSUBSCRIBE commands: an unsubscribe decided
	// when a user's last socket closed must not overtake the subscribe of
	// the same user's next socket, or that socket would get no pushes.
	opMu sync.Mutex
}

// NewHub opens the shared pub/sub connection lazily (on first subscribe);
// Run must be running for messages to be read.
func NewHub(cfg HubConfig) *Hub {
	if cfg.Prefix == "" {
		cfg.Prefix = "mg"
	}
	if cfg.ConfirmTimeout == 0 {
		cfg.ConfirmTimeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		cfg: cfg, conns: pubsub.NewConns(cfg.Redis, cfg.Logger),
		subs: map[string][]*subscriber{}, waiters: map[string][]chan struct{}{},
	}
}

// Subscribe registers deliver for the user's channel and returns once Redis
// has confirmed the subscription, so a caller that loads state afterwards
// cannot miss an event published in between. deliver must not block. A
// socket of a user whose channel is already confirmed returns at once; one
// arriving while the channel's confirmation is still awaited waits for it
// too (sending SUBSCRIBE again, which Redis confirms again), so neither
// sends its hello before the subscription holds.
func (h *Hub) Subscribe(ctx context.Context, userID string, deliver func([]byte)) (func(), error) {
	return h.subscribe(ctx, Channel(h.cfg.Prefix, userID), userID, deliver)
}

// SubscribeQueue registers deliver for an admission queue's channel (see
// QueueChannel), as Subscribe does for a user's.
func (h *Hub) SubscribeQueue(ctx context.Context, queue string, deliver func([]byte)) (func(), error) {
	return h.subscribe(ctx, QueueChannel(h.cfg.Prefix, queue), "admission queue "+queue, deliver)
}

func (h *Hub) subscribe(ctx context.Context, ch, who string, deliver func([]byte)) (func(), error) {
	s := &subscriber{deliver: deliver}
	h.mu.Lock()
	// Waiters are dropped at the confirmation: while any remain, the
	// channel is not confirmed yet.
	confirmedAlready := len(h.subs[ch]) > 0 && len(h.waiters[ch]) == 0
	h.subs[ch] = append(h.subs[ch], s)
	var confirmed chan struct{}
	if !confirmedAlready {
		confirmed = make(chan struct{})
		h.waiters[ch] = append(h.waiters[ch], confirmed)
	}
	h.mu.Unlock()
	unsubscribe := func() { h.remove(ch, s) }
	if confirmedAlready {
		return unsubscribe, nil
	}
	// fail leaves nothing behind: neither the subscriber nor its waiter.
	fail := func(err error) (func(), error) {
		h.dropWaiter(ch, confirmed)
		unsubscribe()
		return nil, fmt.Errorf("subscribe %s: %w", who, err)
	}
	h.opMu.Lock()
	err := h.conns.Subscribe(ctx, ch)
	h.opMu.Unlock()
	if err != nil {
		return fail(err)
	}
	timer := time.NewTimer(h.cfg.ConfirmTimeout)
	defer timer.Stop()
	select {
	case <-confirmed:
		return unsubscribe, nil
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-timer.C:
		return fail(fmt.Errorf("no confirmation within %s", h.cfg.ConfirmTimeout))
	}
}

// dropWaiter forgets a waiter whose Subscribe gave up.
func (h *Hub) dropWaiter(ch string, w chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.waiters[ch]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(h.waiters, ch)
	} else {
		h.waiters[ch] = ws
	}
}

func (h *Hub) remove(ch string, s *subscriber) {
	h.mu.Lock()
	list := h.subs[ch]
	for i, x := range list {
		if x == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	last := len(list) == 0
	if last {
		delete(h.subs, ch)
	} else {
		h.subs[ch] = list
	}
	h.mu.Unlock()
	if !last {
		return
	}
	h.opMu.Lock()
	defer h.opMu.Unlock()
	// A socket of the same user may have subscribed since: then it has sent
	// (or is about to send, after this) its SUBSCRIBE, and the channel stays.
	h.mu.Lock()
	still := len(h.subs[ch]) > 0
	h.mu.Unlock()
	if still {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := h.conns.Unsubscribe(ctx, ch); err != nil {
		h.cfg.Logger.Debug("unsubscribe", "err", err)
	}
}

// Run reads the shared connections until ctx ends, then closes them.
func (h *Hub) Run(ctx context.Context) error {
	var resyncs sync.WaitGroup
	defer resyncs.Wait()
	h.conns.Run(ctx, func(msg any) {
		switch m := msg.(type) {
		case *redis.Message:
			h.dispatch(m.Channel, []byte(m.Payload))
		case *redis.Subscription:
			if pubsub.Confirms(m) {
				h.confirm(m.Channel)
			}
		}
	}, func() {
		h.cfg.Logger.Info("pub/sub connection restored")
		if h.cfg.OnResubscribe != nil {
			resyncs.Go(h.cfg.OnResubscribe)
		}
	})
	return nil
}

func (h *Hub) confirm(ch string) {
	h.mu.Lock()
	ws := h.waiters[ch]
	delete(h.waiters, ch)
	h.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

func (h *Hub) dispatch(ch string, payload []byte) {
	h.mu.Lock()
	list := h.subs[ch] // copy-on-write: safe to read after unlock
	h.mu.Unlock()
	if len(list) == 0 {
		if h.cfg.Metrics != nil && strings.HasPrefix(ch, h.cfg.Prefix+":user:") {
			h.cfg.Metrics.dropped.Inc()
		}
		return
	}
	for _, s := range list {
		s.deliver(payload)
	}
}
