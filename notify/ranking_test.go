package notify_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/pubsub"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/notify"
)

// The channel is the one the rankings Service announces on
// (<prefix>:ranking:<board>:<window>), and a subscription hears it once
// Redis has confirmed it; after the unsubscribe it hears nothing more.
func TestHubSubscribeRanking(t *testing.T) {
	if got := notify.RankingChannel("p", "trending", "hour"); got != "p:ranking:trending:hour" {
		t.Fatalf("channel %q", got)
	}
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		hub := runHub(t, rdb, prefix)
		ctx := context.Background()
		hour, day := newInbox(), newInbox()
		unHour, err := hub.SubscribeRanking(ctx, "trending", "hour", hour.deliver)
		if err != nil {
			t.Fatal(err)
		}
		unDay, err := hub.SubscribeRanking(ctx, "trending", "day", day.deliver)
		if err != nil {
			t.Fatal(err)
		}
		defer unDay()
		msg := `{"board":"trending","window":"hour","period":"2026-12-02T14","weightsVersion":1}`
		if err := pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), prefix+":ranking:trending:hour", msg).Err(); err != nil {
			t.Fatal(err)
		}
		if got := hour.wait(t, 1); got[0] != msg {
			t.Fatalf("hour heard %q", got)
		}
		unHour()
		if err := pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.RankingChannel(prefix, "trending", "hour"), "after").Err(); err != nil {
			t.Fatal(err)
		}
		// The day's channel is another: a publish there reaches it, and
		// only it (the hour's, unsubscribed, heard no more than its one).
		if err := pubsub.Publish(ctx, rdb, pubsub.Sharded(rdb), notify.RankingChannel(prefix, "trending", "day"), "day").Err(); err != nil {
			t.Fatal(err)
		}
		if got := day.wait(t, 1); len(got) != 1 || got[0] != "day" {
			t.Fatalf("day heard %q", got)
		}
		hour.mu.Lock()
		n := len(hour.frames)
		hour.mu.Unlock()
		if n != 1 {
			t.Fatalf("hour heard %d frames after its unsubscribe, want 1 in all", n)
		}
	})
}
