package pool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/provider"
)

// eachPool runs fn on real Redis (skipped without it) and on Memory.
func eachPool(t *testing.T, fn func(t *testing.T, l provider.Live)) {
	t.Run("redis", func(t *testing.T) {
		rdb := redistest.Real(t)
		fn(t, NewRedis(rdb, redistest.Prefix(t), WithClock(func() time.Time { return t0 })))
	})
	t.Run("memory", func(t *testing.T) {
		fn(t, NewMemory(WithClock(func() time.Time { return t0 })))
	})
}

// Goroutines hold distinct assignments on one provider of capacity C at
// once, and all of them one shared assignment too: exactly C assignments
// win in every round, never more, the shared one answers alike to all, and
// the held slots are exactly the winners.
func TestHoldRace(t *testing.T) {
	rounds := 120
	if testing.Short() {
		rounds = 15
	}
	eachPool(t, func(t *testing.T, l provider.Live) {
		ctx := context.Background()
		const q, goroutines, perG = "race", 64, 4
		now := t0.Add(time.Second)
		var holds, wins int
		for r := range rounds {
			capacity := 1 + r%23 // from 1 up to 23, some rounds a fifth of the attempts
			user := fmt.Sprintf("p%03d", r)
			mustOnline(t, l, q, prov(user, capacity, attrsA), "s", t0.Add(time.Hour))
			shared := fmt.Sprintf("r%d-shared", r)
			var (
				mu      sync.Mutex
				won     = map[string]int{} // id -> true answers
				sharedN [2]int             // false, true answers for shared
				errs    []error
				start   = make(chan struct{})
				wg      sync.WaitGroup
			)
			for g := range goroutines {
				wg.Go(func() {
					<-start
					for k := range perG + 1 {
						id := fmt.Sprintf("r%d-g%d-%d", r, g, k)
						if k == g%(perG+1) {
							id = shared
						}
						ok, err := l.Hold(ctx, q, user, id, now)
						mu.Lock()
						switch {
						case err != nil:
							errs = append(errs, err)
						case id == shared && ok:
							sharedN[1]++
						case id == shared:
							sharedN[0]++
						case ok:
							won[id]++
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			holds += goroutines * (perG + 1)
			if len(errs) > 0 {
				t.Fatalf("round %d: %d errors, first %v", r, len(errs), errs[0])
			}
			if sharedN[0] > 0 && sharedN[1] > 0 {
				t.Fatalf("round %d: the shared assignment answered true %d and false %d times", r, sharedN[1], sharedN[0])
			}
			winners := make([]string, 0, len(won)+1)
			for id, n := range won {
				if n != 1 {
					t.Fatalf("round %d: %s answered %d times", r, id, n)
				}
				winners = append(winners, id)
			}
			if sharedN[1] > 0 {
				winners = append(winners, shared)
			}
			if len(winners) != capacity {
				t.Fatalf("round %d: %d assignments hold slots, capacity %d", r, len(winners), capacity)
			}
			slices.Sort(winners)
			p := mustGet(t, l, q, user, now)
			if p.Used != capacity || !slices.Equal(p.Held, winners) {
				t.Fatalf("round %d: held %v, winners %v", r, p.Held, winners)
			}
			// A winner held again is still true and still counted once.
			mustHold(t, l, q, user, winners[0], now, true)
			if p := mustGet(t, l, q, user, now); p.Used != capacity {
				t.Fatalf("round %d: used %d after a repeat, capacity %d", r, p.Used, capacity)
			}
			wins += len(winners)
		}
		t.Logf("%d rounds: %d holds, %d won", rounds, holds, wins)
	})
}
