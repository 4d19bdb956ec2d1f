// Package pubsub carries Redis pub/sub messages on one Redis or on a Redis
// Cluster. On a cluster it uses sharded pub/sub (SPUBLISH, SSUBSCRIBE): a
// channel's messages go through the master of the channel's slot alone, so
// they arrive in the order they were sent and publish throughput grows with
// the masters. Classic PUBLISH on a cluster is broadcast over the cluster
// bus to every node, and messages a client sends through different nodes
// can overtake one another.
package pubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded tells whether rdb is a cluster client, whose channels are
// sharded. Any other value (one node, miniredis, a fake) uses classic
// pub/sub.
func Sharded(rdb any) bool {
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// Publish sends msg on ch through c, a client or a pipeline: SPUBLISH when
// sharded, PUBLISH otherwise.
func Publish(ctx context.Context, c redis.Cmdable, sharded bool, ch string, msg any) *redis.IntCmd {
	if sharded {
		return c.SPublish(ctx, ch, msg)
	}
	return c.Publish(ctx, ch, msg)
}

// Subscribe opens a subscription to channels that share a slot (one channel
// does): SSUBSCRIBE on a cluster, on the master of that slot, which go-redis
// finds again after a failover; SUBSCRIBE otherwise.
func Subscribe(ctx context.Context, rdb redis.UniversalClient, channels ...string) *redis.PubSub {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.SSubscribe(ctx, channels...)
	}
	return rdb.Subscribe(ctx, channels...)
}

// Confirms tells whether a subscription message confirms a subscribe.
func Confirms(s *redis.Subscription) bool {
	return s.Kind == "subscribe" || s.Kind == "ssubscribe"
}

// Opener opens a classic subscription; every go-redis client is one.
type Opener interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Conns holds the subscriptions of a changing set of channels: one
// connection on one Redis; on a cluster, one per master, each channel on
// the connection of its slot's master. Run reads them all.
//
// A cluster moves slots in a failover (or a resharding), and the node that
// lost a slot unsubscribes its channels (SUNSUBSCRIBE pushed by the server),
// or it is gone: messages sent there would be lost without a word. Conns
// then retires that connection (on any error of a cluster connection) and
// subscribes its channels again, one by one, where their slots live now,
// and tells Run's caller, which resends what may have been missed.
type Conns struct {
	cluster *redis.ClusterClient // nil: one connection
	log     *slog.Logger

	mu      sync.Mutex
	closed  bool
	one     *redis.PubSub
	shards  map[string]*redis.PubSub // master address → its connection
	addrOf  map[*redis.PubSub]string
	of      map[string]*redis.PubSub // channel → the connection holding it
	want    map[string]bool          // subscribed and not unsubscribed since
	pending map[string]bool          // wanted channels of retired connections
	wake    chan struct{}            // a shard opened or one retired
}

// NewConns opens connections lazily, on the first Subscribe of each. log
// may be nil.
func NewConns(rdb Opener, log *slog.Logger) *Conns {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conns{log: log,
		shards: map[string]*redis.PubSub{}, addrOf: map[*redis.PubSub]string{},
		of: map[string]*redis.PubSub{}, want: map[string]bool{}, pending: map[string]bool{}, wake: make(chan struct{}, 1),
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		c.cluster = cc
	} else {
		c.one = rdb.Subscribe(context.Background())
	}
	return c
}

// ErrClosed is returned by Subscribe on a cluster once Conns is closed (a
// single Redis answers go-redis's own error then).
var ErrClosed = errors.New("pubsub: closed")

// Subscribe sends the subscribe of ch; its confirmation arrives through Run.
func (c *Conns) Subscribe(ctx context.Context, ch string) error {
	if c.cluster == nil {
		return c.one.Subscribe(ctx, ch)
	}
	master, err := c.cluster.MasterForKey(ctx, ch)
	if err != nil {
		return fmt.Errorf("master of %s: %w", ch, err)
	}
	addr := master.Options().Addr
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.want[ch] = true
	delete(c.pending, ch)
	if ps, ok := c.shards[addr]; ok {
		c.of[ch] = ps
		return ps.SSubscribe(ctx, ch)
	}
	// A new shard's connection is opened by its first SSUBSCRIBE, under the
	// lock: go-redis routes it by that channel's slot, whereas a Receive
	// that came first would open it to a random node.
	ps := c.cluster.SSubscribe(context.Background())
	if err := ps.SSubscribe(ctx, ch); err != nil {
		_ = ps.Close()
		return err
	}
	c.shards[addr], c.addrOf[ps], c.of[ch] = ps, addr, ps
	c.signal()
	return nil
}

func (c *Conns) signal() {
	select {
	case c.wake <- struct{}{}:
	default: // Run has yet to see an earlier one, and will see this too
	}
}

// Unsubscribe sends the unsubscribe of ch.
func (c *Conns) Unsubscribe(ctx context.Context, ch string) error {
	if c.cluster == nil {
		return c.one.Unsubscribe(ctx, ch)
	}
	c.mu.Lock()
	ps := c.of[ch]
	delete(c.of, ch)
	delete(c.want, ch)
	delete(c.pending, ch)
	c.mu.Unlock()
	if ps == nil {
		return nil
	}
	return ps.SUnsubscribe(ctx, ch)
}

// Run reads every connection, those opened later too, each in a goroutine
// of its own, until ctx ends; then closes them all and waits for the reads.
// handle gets each *redis.Message and *redis.Subscription, from any of the
// connections at once, and must not block. restored, when not nil, is
// called (from Run's goroutines) when a connection comes back after a
// failure or channels have moved to another node: messages sent meanwhile
// are lost.
func (c *Conns) Run(ctx context.Context, handle func(msg any), restored func()) {
	var reads sync.WaitGroup
	defer reads.Wait()
	defer c.Close()
	if restored == nil {
		restored = func() {}
	}
	if c.one != nil {
		reads.Go(func() { c.read(ctx, c.one, handle, restored) })
		<-ctx.Done()
		return
	}
	started := map[*redis.PubSub]bool{}
	backoff := retryFirst
	for {
		c.mu.Lock()
		for ps := range c.addrOf {
			if !started[ps] {
				started[ps] = true
				reads.Go(func() { c.read(ctx, ps, handle, restored) })
			}
		}
		for ps := range started {
			if _, held := c.addrOf[ps]; !held {
				delete(started, ps) // retired: its read has returned or will
			}
		}
		moving := len(c.pending) > 0
		c.mu.Unlock()
		var retry <-chan time.Time
		if moving {
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-retry:
			if c.move(ctx) {
				backoff = retryFirst
				restored()
			} else {
				backoff = min(2*backoff, retryMost)
			}
		}
	}
}

// How long a move waits before it reads the cluster's slots again.
const (
	retryFirst = 100 * time.Millisecond
	retryMost  = time.Second
)

// read hands one connection's messages to handle until ctx ends or the
// connection is retired.
func (c *Conns) read(ctx context.Context, ps *redis.PubSub, handle func(any), restored func()) {
	broken := false
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil || c.retired(ps) {
				return
			}
			c.log.Warn("pub/sub receive", "err", err)
			if c.cluster != nil {
				// go-redis would reconnect and send every channel of the
				// connection in one SSUBSCRIBE, which a cluster refuses for
				// channels of several slots (CROSSSLOT); and the node may be
				// gone for good. Retire the connection: Run subscribes its
				// channels one by one where their slots are now.
				c.retire(ps)
				return
			}
			broken = true
			// go-redis reconnects and resubscribes every channel on the next
			// receive; pause so an outage does not spin.
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == "sunsubscribe" && c.wanted(s.Channel, ps) {
			// The server let go of a channel nobody unsubscribed: its slot
			// is served elsewhere now.
			c.log.Info("pub/sub: a node let go of a channel; subscribing where its slot is now", "channel", s.Channel)
			c.retire(ps)
			return
		}
		handle(msg)
		if broken {
			broken = false
			restored()
		}
	}
}

func (c *Conns) wanted(ch string, ps *redis.PubSub) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.of[ch] == ps
}

// retired tells whether ps is closed for good: by Close, or, on a cluster,
// retired after a failure. The one connection to one Redis never is: go-redis
// reconnects it.
func (c *Conns) retired(ps *redis.PubSub) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return true
	}
	_, held := c.addrOf[ps]
	return ps != c.one && !held
}

// retire closes a connection on a node that no longer serves its channels'
// slots and queues the channels for Run to subscribe where they are now.
func (c *Conns) retire(ps *redis.PubSub) {
	c.mu.Lock()
	addr, held := c.addrOf[ps]
	if held {
		delete(c.addrOf, ps)
		if c.shards[addr] == ps {
			delete(c.shards, addr)
		}
		for ch, p := range c.of {
			if p == ps {
				delete(c.of, ch)
				c.pending[ch] = true
			}
		}
	}
	c.mu.Unlock()
	if held {
		_ = ps.Close()
		c.signal()
	}
}

// move subscribes the channels of retired connections again, after reading
// the cluster's slots afresh, one SSUBSCRIBE each. A master that refuses one
// is not tried again this round. It reports whether every one was sent.
func (c *Conns) move(ctx context.Context) bool {
	c.cluster.ReloadState(ctx)
	c.mu.Lock()
	chs := make([]string, 0, len(c.pending))
	for ch := range c.pending {
		chs = append(chs, ch)
	}
	c.mu.Unlock()
	failed := map[string]bool{}
	ok := true
	for _, ch := range chs {
		master, err := c.cluster.MasterForKey(ctx, ch)
		if err == nil && !failed[master.Options().Addr] {
			err = c.Subscribe(ctx, ch)
			if err != nil {
				failed[master.Options().Addr] = true
			}
		}
		if err != nil {
			ok = false
			c.mu.Lock()
			if c.want[ch] && c.of[ch] == nil { // still wanted, still nowhere
				c.pending[ch] = true
			}
			c.mu.Unlock()
		}
	}
	if !ok {
		c.log.Warn("pub/sub: channels not subscribed yet; retrying", "channels", len(chs))
	}
	return ok
}

// Close closes every connection; Run closes them too when it returns.
func (c *Conns) Close() {
	c.mu.Lock()
	c.closed = true
	list := make([]*redis.PubSub, 0, len(c.addrOf)+1)
	if c.one != nil {
		list = append(list, c.one)
	}
	for ps := range c.addrOf {
		list = append(list, ps)
	}
	c.mu.Unlock()
	for _, ps := range list {
		_ = ps.Close()
	}
}
