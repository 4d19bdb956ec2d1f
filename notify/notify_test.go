package notify_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/matchgate/matchgate/internal/clock"
	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/notify"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"))
}

// inbox collects frames delivered to one subscriber.
type inbox struct {
	mu     sync.Mutex
	frames []string
	got    chan struct{}
}

func newInbox() *inbox { return &inbox{got: make(chan struct{}, 1024)} }

func (in *inbox) deliver(b []byte) {
	in.mu.Lock()
	in.frames = append(in.frames, string(b))
	in.mu.Unlock()
	in.got <- struct{}{}
}

func (in *inbox) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		in.mu.Lock()
		if len(in.frames) >= n {
			out := append([]string(nil), in.frames...)
			in.mu.Unlock()
			return out
		}
		in.mu.Unlock()
		select {
		case <-in.got:
		case <-deadline:
			t.Fatalf("got %d frames, want %d", len(in.frames), n)
		}
	}
}

func runHub(t *testing.T, rdb redis.UniversalClient, prefix string) *notify.Hub {
	t.Helper()
	hub := notify.NewHub(notify.HubConfig{Redis: rdb, Prefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return hub
}

func TestHub(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		hub := runHub(t, rdb, prefix)
		ctx := context.Background()
		a1, a2, b := newInbox(), newInbox(), newInbox()
		unA1, err := hub.Subscribe(ctx, "alice", a1.deliver)
		if err != nil {
			t.Fatal(err)
		}
		// Subscribe returns only once Redis confirmed: a publish right after
		// must arrive.
		if err := pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, "alice"), "one").Err(); err != nil {
			t.Fatal(err)
		}
		a1.wait(t, 1)
		unA2, err := hub.Subscribe(ctx, "alice", a2.deliver) // a second socket of alice
		if err != nil {
			t.Fatal(err)
		}
		unB, err := hub.Subscribe(ctx, "bob", b.deliver)
		if err != nil {
			t.Fatal(err)
		}
		pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, "alice"), "two")
		pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, "bob"), "for bob")
		if got := a2.wait(t, 1); got[0] != "two" {
			t.Fatalf("second socket got %v", got)
		}
		if got := a1.wait(t, 2); got[1] != "two" {
			t.Fatalf("first socket got %v", got)
		}
		if got := b.wait(t, 1); got[0] != "for bob" {
			t.Fatalf("bob got %v", got)
		}
		unA1()
		pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, "alice"), "three")
		a2.wait(t, 2)
		if n := len(a1.wait(t, 2)); n != 2 {
			t.Fatalf("unsubscribed socket got %d frames", n)
		}
		unA2()
		unB()
		// Re-subscribing after the last one left works.
		c := newInbox()
		unC, err := hub.Subscribe(ctx, "alice", c.deliver)
		if err != nil {
			t.Fatal(err)
		}
		defer unC()
		pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, "alice"), "again")
		c.wait(t, 1)
	})
}

// Many users, many frames: none is lost between Redis and the subscribers.
func TestHubNoLoss(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		hub := runHub(t, rdb, prefix)
		ctx := context.Background()
		const users, each = 50, 40
		boxes := make([]*inbox, users)
		for i := range boxes {
			boxes[i] = newInbox()
			un, err := hub.Subscribe(ctx, fmt.Sprint("u", i), boxes[i].deliver)
			if err != nil {
				t.Fatal(err)
			}
			defer un()
		}
		pipe, sharded := rdb.Pipeline(), pubsub.Sharded(rdb)
		for k := range each {
			for i := range users {
				pubsub.Publish(ctx, pipe, sharded, notify.Channel(prefix, fmt.Sprint("u", i)), fmt.Sprint(k))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, b := range boxes {
			got := b.wait(t, each)
			for k := range each {
				if got[k] != fmt.Sprint(k) {
					t.Fatalf("user %d frame %d = %q (order or loss)", i, k, got[k])
				}
			}
		}
	})
}

func committedMatch(t *testing.T, led matcher.Ledger, users ...string) []matcher.Event {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	m := matcher.Match{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", time.Now().UnixNano()%1e12), Queue: "q", Region: "global", State: matcher.MatchReady, FormedBy: matcher.FormedFilled, CreatedAt: now, Version: 1}
	for i, u := range users {
		tk, err := led.CreateTicket(ctx, matcher.Ticket{
			ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", time.Now().UnixNano()%1e12+int64(i)), UserID: u, Queue: "q", Region: "global",
			Status: matcher.StatusWaiting, EnqueuedAt: now, Deadline: now.Add(time.Minute), UpdatedAt: now, Version: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		m.Players = append(m.Players, matcher.Player{TicketID: tk.ID, UserID: u})
	}
	rs, err := led.CommitMatches(ctx, []matcher.Match{m}, 0)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	return rs[0].Events
}

func pending(t *testing.T, led matcher.Ledger) int {
	t.Helper()
	n, err := led.DrainOutbox(context.Background(), -time.Hour, 1000, func([]matcher.Event) error { return fmt.Errorf("just counting") })
	if err != nil && n == 0 {
		return 0
	}
	return n
}

// Deliver publishes at once and then deletes the outbox rows; the relay has
// nothing left to do.
func TestPublisherDeliverAcks(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		led := ledger.NewMemory()
		hub := runHub(t, rdb, prefix)
		ctx, cancel := context.WithCancel(context.Background())
		pub := notify.NewPublisher(notify.PublisherConfig{Redis: rdb, Outbox: led, Prefix: prefix})
		done := make(chan struct{})
		go func() { _ = pub.Run(ctx); close(done) }()
		a, b := newInbox(), newInbox()
		unA, _ := hub.Subscribe(ctx, "a", a.deliver)
		unB, _ := hub.Subscribe(ctx, "b", b.deliver)
		defer unA()
		defer unB()
		events := committedMatch(t, led, "a", "b")
		pub.Deliver(ctx, events)
		a.wait(t, 1)
		b.wait(t, 1)
		cancel() // Run flushes acknowledgements on the way out
		<-done
		if n := pending(t, led); n != 0 {
			t.Fatalf("%d outbox rows left after delivery", n)
		}
	})
}

// A crash between commit and publish loses nothing: the relay publishes the
// event from the outbox, once it is older than the grace period.
func TestRelayPublishesWhatACrashLeft(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := clock.NewFixed(time.Now())
		led := ledger.NewMemoryAt(clk.Now)
		hub := runHub(t, rdb, prefix)
		ctx := context.Background()
		a := newInbox()
		unA, _ := hub.Subscribe(ctx, "a", a.deliver)
		defer unA()
		committedMatch(t, led, "a", "b") // committed, never delivered
		relay := notify.NewRelay(notify.RelayConfig{Redis: rdb, Outbox: led, Prefix: prefix, Grace: 2 * time.Second})
		if n, err := relay.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("sweep inside the grace period took %d (%v)", n, err)
		}
		clk.Advance(3 * time.Second)
		if n, err := relay.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("sweep took %d events (%v), want 1", n, err)
		}
		a.wait(t, 1)
		if n, _ := relay.Sweep(ctx); n != 0 {
			t.Fatalf("a relayed event was relayed again")
		}
	})
}

// While Redis is down the relay's publish fails and the event stays; it goes
// out once Redis is back.
func TestRelayRetriesAfterOutage(t *testing.T) {
	rdb, mr := redistest.MiniServer(t)
	clk := clock.NewFixed(time.Now())
	led := ledger.NewMemoryAt(clk.Now)
	committedMatch(t, led, "a", "b")
	clk.Advance(time.Minute)
	relay := notify.NewRelay(notify.RelayConfig{Redis: rdb, Outbox: led})
	mr.SetError("LOADING down for the test")
	if _, err := relay.Sweep(context.Background()); err == nil {
		t.Fatal("sweep succeeded with Redis failing")
	}
	mr.SetError("")
	if n, err := relay.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("after recovery: %d %v", n, err)
	}
}

// A user whose last socket closes while the next one opens keeps the
// subscription: the unsubscribe of the old socket never overtakes the
// subscribe of the new one.
func TestHubResubscribeRace(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		hub := runHub(t, rdb, prefix)
		ctx := context.Background()
		for i := range 300 {
			user := fmt.Sprint("u", i%7)
			old := newInbox()
			unOld, err := hub.Subscribe(ctx, user, old.deliver)
			if err != nil {
				t.Fatal(err)
			}
			next := newInbox()
			var unNext func()
			var wg sync.WaitGroup
			wg.Go(unOld)
			wg.Go(func() {
				un, err := hub.Subscribe(ctx, user, next.deliver)
				if err != nil {
					t.Error(err)
				}
				unNext = un
			})
			wg.Wait()
			if err := pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.Channel(prefix, user), fmt.Sprint(i)).Err(); err != nil {
				t.Fatal(err)
			}
			if got := next.wait(t, 1); got[0] != fmt.Sprint(i) {
				t.Fatalf("round %d: got %v", i, got)
			}
			unNext()
		}
	})
}
