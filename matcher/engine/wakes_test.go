package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/lease"
)

// TestWakesCoalesce: wakes arriving while a publish is in flight are sent
// together by the next one, once per partition, and none is lost.
func TestWakesCoalesce(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sub := pubsub.Subscribe(ctx, rdb, lease.WakeChannel(prefix))
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the subscription is live
			t.Fatal(err)
		}
		// A client of its own whose first publish is held until released.
		prdb := redistest.Clone(t, rdb)
		hold := &holdFirstPipeline{entered: make(chan struct{}), release: make(chan struct{})}
		prdb.AddHook(hold)
		w := lease.NewWakes(prdb, prefix, nil)
		var run sync.WaitGroup
		run.Go(func() { _ = w.Run(ctx) })
		defer run.Wait()
		defer cancel()

		a := matcher.Partition{Queue: "duel", Region: "eu"}
		b := matcher.Partition{Queue: "duel", Region: "us"}
		w.Wake(a)
		<-hold.entered // the first publish (a) is in flight
		var wg sync.WaitGroup
		for i := range 1000 {
			wg.Go(func() {
				if i%2 == 0 {
					w.Wake(a)
				} else {
					w.Wake(b)
				}
			})
		}
		wg.Wait()
		close(hold.release)

		got := map[string]int{}
		for n := 0; n < 3; n++ {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			msg, err := sub.ReceiveMessage(rctx)
			rcancel()
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			got[msg.Payload]++
		}
		if got[a.String()] != 2 || got[b.String()] != 1 {
			t.Fatalf("published %v; want %s twice (the held publish and one for 500 wakes) and %s once", got, a, b)
		}
		// Nothing more is published for those wakes.
		rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer rcancel()
		if msg, err := sub.ReceiveMessage(rctx); err == nil {
			t.Fatalf("extra wake published: %s", msg.Payload)
		}
	})
}

// holdFirstPipeline holds the client's first pipeline until release.
type holdFirstPipeline struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (*holdFirstPipeline) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*holdFirstPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdFirstPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.entered)
			<-h.release
		}
		return next(ctx, cmds)
	}
}
