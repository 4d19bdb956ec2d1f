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
	"sync"

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
type Conns struct {
	cluster *redis.ClusterClient // nil: one connection

	mu     sync.Mutex
	closed bool
	one    *redis.PubSub
	shards map[string]*redis.PubSub // master address → its connection
	of     map[string]*redis.PubSub // channel → the connection holding it
	added  chan struct{}            // a shard was opened: Run starts its read
}

// NewConns opens connections lazily, on the first Subscribe of each.
func NewConns(rdb Opener) *Conns {
	c := &Conns{shards: map[string]*redis.PubSub{}, of: map[string]*redis.PubSub{}, added: make(chan struct{}, 1)}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		c.cluster = cc
	} else {
		c.one = rdb.Subscribe(context.Background())
	}
	return c
}

// ErrClosed is returned by Subscribe after Run has returned.
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
	c.shards[addr], c.of[ch] = ps, ps
	select {
	case c.added <- struct{}{}:
	default: // Run has yet to see an earlier one, and will see this too
	}
	return nil
}

// Unsubscribe sends the unsubscribe of ch.
func (c *Conns) Unsubscribe(ctx context.Context, ch string) error {
	if c.cluster == nil {
		return c.one.Unsubscribe(ctx, ch)
	}
	c.mu.Lock()
	ps := c.of[ch]
	delete(c.of, ch)
	c.mu.Unlock()
	if ps == nil {
		return nil
	}
	return ps.SUnsubscribe(ctx, ch)
}

// Run calls read with each connection, in a goroutine of its own, those
// opened later too, until ctx ends; then closes every connection (which ends
// a blocked Receive) and waits for the reads to return.
func (c *Conns) Run(ctx context.Context, read func(ctx context.Context, ps *redis.PubSub)) {
	var reads sync.WaitGroup
	defer reads.Wait()
	defer c.Close()
	start := func(ps *redis.PubSub) { reads.Go(func() { read(ctx, ps) }) }
	if c.one != nil {
		start(c.one)
		<-ctx.Done()
		return
	}
	started := map[*redis.PubSub]bool{}
	for {
		c.mu.Lock()
		for _, ps := range c.shards {
			if !started[ps] {
				started[ps] = true
				start(ps)
			}
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-c.added:
		}
	}
}

// Close closes every connection; Run closes them too when it returns.
func (c *Conns) Close() {
	c.mu.Lock()
	c.closed = true
	list := make([]*redis.PubSub, 0, len(c.shards)+1)
	if c.one != nil {
		list = append(list, c.one)
	}
	for _, ps := range c.shards {
		list = append(list, ps)
	}
	c.mu.Unlock()
	for _, ps := range list {
		_ = ps.Close()
	}
}
