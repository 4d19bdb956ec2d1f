package line

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchgate/matchgate/admission"
)

// A Take and Removes of the same users race: each user present leaves the
// line through exactly one of them, never both, never neither, and the
// taken are exactly those in processing.
func TestTakeRemoveRace(t *testing.T) {
	rounds := 1000
	if testing.Short() {
		rounds = 100
	}
	eachLine(t, func(t *testing.T, l admission.Line) {
		ctx := context.Background()
		const q, perRound = "race", 4
		tok, err := l.AcquireLease(ctx, q, "adm", t0, 24*time.Hour, 0)
		if err != nil || tok == 0 {
			t.Fatalf("acquire = %d, %v", tok, err)
		}
		var takes, removes int
		for r := range rounds {
			ids := make([]string, perRound)
			ps := make([]admission.Place, perRound)
			for i := range ids {
				ids[i] = fmt.Sprintf("r%d-u%d", r, i)
				ps[i] = place(q, ids[i], int64(r*perRound+i+1))
			}
			mustAdd(t, l, q, ps...)
			// Some rounds take only part of the line, so some users are
			// left to the removes alone.
			n := perRound - r%2
			now := t0.Add(time.Duration(r) * 2 * time.Second)
			var (
				taken   []admission.Taken
				takeErr error
				removed = make([]int64, perRound)
				remErr  = make([]error, perRound)
				start   = make(chan struct{})
				wg      sync.WaitGroup
			)
			wg.Go(func() {
				<-start
				taken, _, takeErr = l.Take(ctx, q, tok, n, 1000, now)
			})
			for i, id := range ids {
				wg.Go(func() {
					<-start
					removed[i], remErr[i] = l.(remover).remove(ctx, q, []string{id})
				})
			}
			close(start)
			wg.Wait()
			if takeErr != nil {
				t.Fatalf("round %d take: %v", r, takeErr)
			}
			for i, id := range ids {
				if remErr[i] != nil {
					t.Fatalf("round %d remove %s: %v", r, id, remErr[i])
				}
				wasTaken := slices.ContainsFunc(taken, func(x admission.Taken) bool { return x.UserID == id })
				switch {
				case wasTaken && removed[i] == 1:
					t.Fatalf("round %d: %s both taken and removed", r, id)
				case !wasTaken && removed[i] == 0:
					t.Fatalf("round %d: %s neither taken nor removed", r, id)
				case wasTaken:
					takes++
				default:
					removes++
				}
			}
			if sz, err := l.Size(ctx, q); err != nil || sz != 0 {
				t.Fatalf("round %d: %d left in the line, %v", r, sz, err)
			}
			st, err := l.Stale(ctx, q, now.Add(time.Millisecond))
			if err != nil || !equalTaken(st, taken) {
				t.Fatalf("round %d: processing %+v, taken %+v (%v)", r, st, taken, err)
			}
			if err := l.Ack(ctx, q, users(taken)); err != nil {
				t.Fatal(err)
			}
		}
		// Both must win now and then, or the race was not run.
		if takes == 0 || removes == 0 {
			t.Fatalf("takes won %d, removes %d: no race", takes, removes)
		}
		t.Logf("%d rounds: %d taken, %d removed", rounds, takes, removes)
	})
}
