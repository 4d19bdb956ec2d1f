package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// slowLedger holds every read of one queue's waiting tickets until gate
// closes, whatever the caller's context: a pass that takes its time.
type slowLedger struct {
	matcher.Ledger
	queue string
	gate  chan struct{}
}

func (l *slowLedger) Waiting(ctx context.Context, p matcher.Partition) ([]matcher.Ticket, error) {
	if p.Queue == l.queue {
		<-l.gate
	}
	return l.Ledger.Waiting(ctx, p)
}

// Giving up a partition whose engine is slow to stop does not hold up the
// lease loop: the other partitions' leases go on being renewed.
func TestSlowReleaseDoesNotStopRenewals(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		clock := &fakeClock{now: t0}
		led := &slowLedger{Ledger: ledger.NewMemory(), queue: "b", gate: make(chan struct{})}
		c := normalized(t, matcher.QueueConfig{Name: "a", Seats: matcher.Seats{Players: 2}}, matcher.QueueConfig{Name: "b", Seats: matcher.Seats{Players: 2}})
		r := startRunner(t, backend{rdb: rdb, prefix: prefix, led: led}, c, clock.Now)
		t.Cleanup(func() { close(led.gate) }) // before the runner stops
		eventually(t, "both partitions held", func() bool { return slices.Equal(r.Held(), []string{"a:global", "b:global"}) })

		// A second matcher registers: the share falls to one, and b (whose
		// engine is stuck in its takeover pass) is given up.
		registry := prefix + ":matchers"
		if err := rdb.ZAdd(ctx, registry, redis.Z{Score: float64(t0.UnixMilli()), Member: "other"}).Err(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b being given up", func() bool { return slices.Equal(r.Held(), []string{"a:global"}) })

		// Lease rounds go on while b's engine has not stopped: a round
		// stamps the registry with the clock.
		later := t0.Add(500 * time.Millisecond)
		clock.set(later)
		eventually(t, "a lease round after the release began", func() bool {
			s, err := rdb.ZScore(ctx, registry, "m0").Result()
			return err == nil && int64(s) == later.UnixMilli()
		})
		p := pool.New(rdb, prefix)
		for _, part := range []string{"a:global", "b:global"} {
			if v, err := rdb.Get(ctx, p.LeaseKey(part)).Result(); err != nil || !strings.HasPrefix(v, "m0 ") {
				t.Fatalf("lease of %s = %q, %v; want still held by m0", part, v, err)
			}
		}
	})
}
