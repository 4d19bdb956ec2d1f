package pubsub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/faultproxy"
	"github.com/matchgate/matchgate/internal/redistest"
)

// inbox collects what Run hands over, by channel.
type inbox struct {
	mu        sync.Mutex
	got       map[string][]string
	confirmed map[string]int
	restored  int
}

func newInbox() *inbox { return &inbox{got: map[string][]string{}, confirmed: map[string]int{}} }

func (b *inbox) handle(msg any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Message:
		b.got[m.Channel] = append(b.got[m.Channel], m.Payload)
	case *redis.Subscription:
		if Confirms(m) {
			b.confirmed[m.Channel]++
		}
	}
}

func (b *inbox) restore() {
	b.mu.Lock()
	b.restored++
	b.mu.Unlock()
}

// until waits (bounded) for cond over the inbox.
func (b *inbox) until(t *testing.T, what string, cond func(b *inbox) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b.mu.Lock()
		ok := cond(b)
		b.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runConns(t *testing.T, rdb redis.UniversalClient) (*Conns, *inbox) {
	t.Helper()
	c, b := NewConns(rdb, nil), newInbox()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, b.handle, b.restore) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return c, b
}

// Many channels, many messages each: every one arrives, in order, and an
// unsubscribed channel gets nothing more. On a cluster the channels spread
// over the masters, one connection each.
func TestConnsDeliverInOrder(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		c, b := runConns(t, rdb)
		const chans, each = 40, 25
		ch := func(i int) string { return fmt.Sprintf("%s:user:u%d", prefix, i) }
		for i := range chans {
			if err := c.Subscribe(ctx, ch(i)); err != nil {
				t.Fatal(err)
			}
		}
		b.until(t, "every confirmation", func(b *inbox) bool { return len(b.confirmed) == chans })
		if _, cluster := rdb.(*redis.ClusterClient); cluster {
			c.mu.Lock()
			n := len(c.addrOf)
			c.mu.Unlock()
			if n != 3 {
				t.Errorf("%d connections for 40 channels on 3 masters", n)
			}
		}
		sharded := Sharded(rdb)
		pipe := rdb.Pipeline()
		for k := range each {
			for i := range chans {
				Publish(ctx, pipe, sharded, ch(i), fmt.Sprint(k))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		b.until(t, "every message", func(b *inbox) bool {
			for i := range chans {
				if len(b.got[ch(i)]) < each {
					return false
				}
			}
			return true
		})
		for i := range chans {
			for k, v := range b.got[ch(i)] {
				if v != fmt.Sprint(k) {
					t.Fatalf("%s message %d = %q: out of order", ch(i), k, v)
				}
			}
		}
		for i := range chans / 2 {
			if err := c.Unsubscribe(ctx, ch(i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond) // the unsubscribes reach the nodes
		for i := range chans {
			if err := Publish(ctx, rdb, sharded, ch(i), "late").Err(); err != nil {
				t.Fatal(err)
			}
		}
		b.until(t, "the late messages", func(b *inbox) bool {
			for i := chans / 2; i < chans; i++ {
				if len(b.got[ch(i)]) < each+1 {
					return false
				}
			}
			return true
		})
		b.mu.Lock()
		defer b.mu.Unlock()
		for i := range chans / 2 {
			if n := len(b.got[ch(i)]); n != each {
				t.Errorf("unsubscribed %s got %d messages, want %d", ch(i), n, each)
			}
		}
	})
}

// A failover moves a master's slots to its replica, which unsubscribes the
// channels there: Conns subscribes them again on the new master, says so,
// and what is published afterwards arrives.
func TestConnsFollowAFailover(t *testing.T) {
	rdb := redistest.FailoverCluster(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	c, b := runConns(t, rdb)
	const chans = 30
	ch := func(i int) string { return fmt.Sprintf("%s:user:u%d", prefix, i) }
	for i := range chans {
		if err := c.Subscribe(ctx, ch(i)); err != nil {
			t.Fatal(err)
		}
	}
	b.until(t, "every confirmation", func(b *inbox) bool { return len(b.confirmed) == chans })

	from, to := redistest.FailOver(t, rdb, ch(0))
	t.Logf("failed over %s to %s", from, to)
	b.until(t, "restored", func(b *inbox) bool { return b.restored > 0 })
	// Publish until every channel has heard: a message sent while a channel
	// was between nodes is lost (restored said so), none after that.
	for round := 0; ; round++ {
		for i := range chans {
			if err := rdb.SPublish(ctx, ch(i), fmt.Sprint(round)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		b.mu.Lock()
		all := true
		for i := range chans {
			all = all && len(b.got[ch(i)]) > 0
		}
		b.mu.Unlock()
		if all {
			break
		}
		if round == 100 {
			t.Fatalf("channels still deaf 100 rounds after the failover")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A connection opened while the client's slots were stale may still be
	// on the demoted node, to be retired at its first MOVED: wait for that.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c.mu.Lock()
		_, stale := c.shards[from]
		pending, held := len(c.pending), len(c.of)
		c.mu.Unlock()
		if !stale && pending == 0 && held == chans {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the move: %d pending, %d held (want 0 and %d), a connection to %s (a replica now): %v", pending, held, chans, from, stale)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The one connection to one Redis, cut, comes back by itself: restored is
// called and what is published afterwards arrives.
func TestConnsReconnect(t *testing.T) {
	redistest.Real(t)
	prefix := redistest.Prefix(t)
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, opt.Addr)
	o := *opt
	o.Addr = proxy.Addr()
	rdb := redis.NewClient(&o)
	defer rdb.Close()
	ctx := context.Background()
	c, b := runConns(t, rdb)
	ch := prefix + ":user:u"
	if err := c.Subscribe(ctx, ch); err != nil {
		t.Fatal(err)
	}
	b.until(t, "the confirmation", func(b *inbox) bool { return b.confirmed[ch] == 1 })
	proxy.DropReply([]byte("cut-here"))
	if err := rdb.Publish(ctx, ch, "cut-here").Err(); err != nil {
		t.Fatal(err)
	}
	b.until(t, "restored", func(b *inbox) bool { return b.restored > 0 && b.confirmed[ch] == 2 })
	if err := rdb.Publish(ctx, ch, "after").Err(); err != nil {
		t.Fatal(err)
	}
	b.until(t, "the message after", func(b *inbox) bool {
		got := b.got[ch]
		return len(got) > 0 && got[len(got)-1] == "after"
	})
}
