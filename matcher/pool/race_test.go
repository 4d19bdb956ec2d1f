package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
)

// TestClaimRemoveRace lets overlapping claims and cancels fight over the same
// tickets and checks that every ticket leaves the pool through exactly one
// winner, and that every loser is told the truth about who won.
func TestClaimRemoveRace(t *testing.T) {
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		testClaimRemoveRace(t, New(rdb, prefix), rounds)
	})
}

func testClaimRemoveRace(t *testing.T, p *Pool, rounds int) {
	ctx := context.Background()
	const part = "race:eu"
	const fence = 7
	if err := p.rdb.Set(ctx, p.FenceKey(part), fence, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Every ticket is wanted by two claims; 1 and 4 are also cancelled.
	groups := [][]int{{0, 1, 2}, {2, 3, 4}, {4, 5, 0}, {1, 3, 5}}
	cancels := []int{1, 4}
	const tickets = 6

	var (
		claimWins, claimLosses, cancelWins, cancelLosses, sweeps int
	)
	for r := range rounds {
		id := func(i int) string { return fmt.Sprintf("r%d-t%d", r, i) }
		es := make([]matcher.Entry, tickets)
		for i := range tickets {
			es[i] = entry(id(i), float64(i), time.Duration(i)*time.Millisecond, time.Hour)
			mustEnqueue(t, p, part, es[i])
		}

		claims := make([]ClaimResult, len(groups))
		claimErrs := make([]error, len(groups))
		removes := make([]RemoveResult, len(cancels))
		removeErrs := make([]error, len(cancels))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g, group := range groups {
			wg.Go(func() {
				entries := make([]matcher.Entry, len(group))
				for k, i := range group {
					entries[k] = es[i]
				}
				// Half the claims unfenced, to race both code paths.
				var token int64
				if g%2 == 0 {
					token = fence
				}
				<-start
				claims[g], claimErrs[g] = p.Claim(ctx, part, token, fmt.Sprintf("r%d-m%d", r, g), entries)
			})
		}
		for c, i := range cancels {
			wg.Go(func() {
				<-start
				removes[c], removeErrs[c] = p.Remove(ctx, part, id(i))
			})
		}
		close(start)
		wg.Wait()

		// winner[i] names whoever took ticket i out of the pool.
		winners := make([][]string, tickets)
		for g, res := range claims {
			if claimErrs[g] != nil {
				t.Fatalf("round %d claim %d: %v", r, g, claimErrs[g])
			}
			if res.OK {
				claimWins++
				for _, i := range groups[g] {
					winners[i] = append(winners[i], fmt.Sprintf("r%d-m%d", r, g))
				}
			} else {
				claimLosses++
			}
		}
		for c, res := range removes {
			if removeErrs[c] != nil {
				t.Fatalf("round %d remove %d: %v", r, c, removeErrs[c])
			}
			if res.Removed {
				cancelWins++
				winners[cancels[c]] = append(winners[cancels[c]], "cancel")
			} else {
				cancelLosses++
			}
		}
		// Whatever nobody won is still waiting; the sweep must find exactly
		// those.
		for i := range tickets {
			res, err := p.Remove(ctx, part, id(i))
			if err != nil {
				t.Fatal(err)
			}
			if res.Removed {
				sweeps++
				winners[i] = append(winners[i], "sweep")
			}
		}

		for i, w := range winners {
			if len(w) != 1 {
				t.Fatalf("round %d ticket %d removed by %d winners: %v", r, i, len(w), w)
			}
		}
		// Losers were told the truth.
		for c, res := range removes {
			i := cancels[c]
			if !res.Removed && res.ClaimedBy != winners[i][0] {
				t.Fatalf("round %d: cancel of %d says claimed by %q, winner %q", r, i, res.ClaimedBy, winners[i][0])
			}
		}
		for g, res := range claims {
			if res.OK {
				continue
			}
			if len(res.Missing) == 0 {
				t.Fatalf("round %d: claim %d lost with nothing missing", r, g)
			}
			for _, m := range res.Missing {
				var i int
				if _, err := fmt.Sscanf(m, fmt.Sprintf("r%d-t%%d", r), &i); err != nil {
					t.Fatalf("missing id %q: %v", m, err)
				}
				if w := winners[i][0]; w == "sweep" || w == fmt.Sprintf("r%d-m%d", r, g) {
					t.Fatalf("round %d: claim %d reports %s missing, but it was taken by %s", r, g, m, w)
				}
			}
		}
		for _, s := range []string{"pool", "enq"} {
			if n := p.rdb.ZCard(ctx, p.Key(part, s)).Val(); n != 0 {
				t.Fatalf("round %d: %d members left in %s", r, n, s)
			}
		}
		// watch keeps the member of a ticket a claim won (a watch scan
		// drops it), and nothing of one a cancel or the sweep removed.
		pipe := p.rdb.Pipeline()
		inWatch := make([]*redis.FloatCmd, tickets)
		for i := range tickets {
			inWatch[i] = pipe.ZScore(ctx, p.Key(part, "watch"), member(es[i]))
		}
		_, _ = pipe.Exec(ctx) // a missing member is redis.Nil; read each result
		for i, w := range winners {
			claimedByMatch := w[0] != "cancel" && w[0] != "sweep"
			_, err := inWatch[i].Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			if (err == nil) != claimedByMatch {
				t.Fatalf("round %d ticket %d won by %s: in watch %v (%v)", r, i, w[0], err == nil, err)
			}
		}
	}
	t.Logf("%d rounds: claims won %d lost %d, cancels won %d lost %d, left for the sweep %d",
		rounds, claimWins, claimLosses, cancelWins, cancelLosses, sweeps)
	if claimWins == 0 || cancelWins == 0 {
		t.Errorf("the race never let both sides win (claims %d, cancels %d): not a race", claimWins, cancelWins)
	}
}
