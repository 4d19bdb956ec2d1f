package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/pgtest"
	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/notify"
)

// The grace before the relay takes an event is judged by the record's clock
// alone: a relay whose clock is 5 s ahead does not take a fresh event (and
// race the direct publish), and one 5 s behind takes an event once it is as
// old as the grace, not 5 s later.
func TestRelayGraceIgnoresTheRelaysClock(t *testing.T) {
	for name, newLedger := range map[string]func(t *testing.T) matcher.Ledger{
		"memory":   func(*testing.T) matcher.Ledger { return ledger.NewMemory() },
		"postgres": func(t *testing.T) matcher.Ledger { return ledger.NewPostgres(pgtest.New(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			rdb := redistest.Mini(t)
			led := newLedger(t)
			ctx := context.Background()
			skewed := func(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

			committedMatch(t, led, "a", "b")
			ahead := notify.NewRelay(notify.RelayConfig{Redis: rdb, Outbox: led, Grace: 3 * time.Second, Now: skewed(5 * time.Second)})
			if n, err := ahead.Sweep(ctx); err != nil || n != 0 {
				t.Fatalf("a relay 5 s ahead took %d fresh events (%v) inside a 3 s grace", n, err)
			}

			const grace = 200 * time.Millisecond
			behind := notify.NewRelay(notify.RelayConfig{Redis: rdb, Outbox: led, Grace: grace, Now: skewed(-5 * time.Second)})
			committed := time.Now()
			committedMatch(t, led, "c", "d")
			taken := 0
			for deadline := time.Now().Add(4 * time.Second); taken < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				n, err := behind.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n > 0 && taken+n == 2 && time.Since(committed) < grace {
					t.Fatalf("the relay took an event %v old, inside its %v grace", time.Since(committed), grace)
				}
				taken += n
			}
			if taken != 2 {
				t.Fatalf("a relay 5 s behind took %d of 2 events within 4 s of a %v grace", taken, grace)
			}
		})
	}
}
