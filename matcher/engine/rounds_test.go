package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// TestDensePassReadsCandidatesWithTheAnchors: through a dense partition a
// pass reads each round's candidates in the round trip that reads the
// round's anchors (the head's, then each round's claims'), never in one of
// their own. On a busy server every round trip waits its turn among the
// gateway's goroutines, so the pass's round trips bound its length.
func TestDensePassReadsCandidatesWithTheAnchors(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, trips := countedHarness(t, rdb, prefix)
		const players = 200
		for i := range players {
			h.join(fmt.Sprint("u", i), float64(i%50))
			h.advance(time.Millisecond)
		}
		trips.reset()
		res := h.tick()
		// Rounds of 10, 20 and 40 anchors, then of the 30 left, seat
		// everyone.
		if res.Matches != players/2 {
			t.Fatalf("one pass formed %d matches, want %d", res.Matches, players/2)
		}
		all, nearest := trips.get()
		if nearest != 0 {
			t.Errorf("%d of the pass's %d round trips read candidates alone", nearest, all)
		}
		t.Logf("%d matches in %d round trips", res.Matches, all)
	})
}

// TestBacklogPassStartsWhereTheLastLeftOff: under a backlog a pass starts
// with as many anchors as the last dense round of the pass before it (at
// most half a pass), not with AnchorDepth again; once a round finds the
// backlog gone, the next pass starts at AnchorDepth.
func TestBacklogPassStartsWhereTheLastLeftOff(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		h, trips := countedHarness(t, rdb, prefix)
		joined := 0
		join := func(n int) {
			for range n {
				h.join(fmt.Sprint("u", joined), float64(joined%50))
				joined++
				h.advance(time.Millisecond)
			}
		}
		pass := func() (matches int, rounds []string) {
			t.Helper()
			trips.reset()
			res := h.tick()
			return res.Matches, trips.anchorReads()
		}
		first := func(rounds []string) int {
			if len(rounds) == 0 {
				t.Fatal("a pass read no anchors")
			}
			n, _ := strconv.Atoi(rounds[0])
			return n
		}
		join(600) // more than two passes of 256 seats
		m1, r1 := pass()
		m2, r2 := pass()
		m3, r3 := pass()
		t.Logf("rounds of anchors: %v, %v, %v", r1, r2, r3)
		// Each of the first two stops at 256 seats or a few short of
		// them (a round of fewer than AnchorDepth anchors is left to the
		// next pass); the third seats the rest.
		for _, m := range []int{m1, m2} {
			if m > 128 || m < 110 {
				t.Fatalf("passes formed %d, %d, %d matches, want 110..128 in each of the first two", m1, m2, m3)
			}
		}
		if m1+m2+m3 != 300 {
			t.Fatalf("passes formed %d, %d, %d matches, want 300 in all", m1, m2, m3)
		}
		// The first pass finds the backlog from AnchorDepth up; the next
		// starts with its largest round, up to half a pass (64 pairs).
		if first(r1) != 10 || first(r2) <= 10 || first(r2) > 64 || first(r3) != 64 {
			t.Fatalf("first rounds of %d, %d, %d anchors, want 10, 11..64, 64", first(r1), first(r2), first(r3))
		}
		if len(r2) >= len(r1) {
			t.Errorf("the second pass took %d rounds, the first %d", len(r2), len(r1))
		}
		// The third pass's last round found the backlog gone.
		join(40)
		if m, r := pass(); m != 20 || first(r) != 10 {
			t.Fatalf("after the backlog: %d matches, first round of %d anchors, want 20 and 10", m, first(r))
		}
	})
}

// countedHarness is a harness of a pairs queue where everyone fits every
// window, whose Redis client counts its round trips.
func countedHarness(t *testing.T, rdb redis.UniversalClient, prefix string) (*harness, *tripCounter) {
	t.Helper()
	one, ok := rdb.(*redis.Client)
	if !ok {
		t.Skip("counts the round trips of a one-node client")
	}
	trips := &tripCounter{}
	crdb := redis.NewClient(one.Options())
	t.Cleanup(func() { _ = crdb.Close() })
	crdb.AddHook(trips)
	h := newHarnessWith(t, matcher.QueueConfig{
		Name:        "duel",
		Seats:       matcher.Seats{Players: 2},
		SkillRules:  matcher.SkillRules{Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1000}}}},
		RegionRules: matcher.RegionRules{Regions: []string{"eu"}},
	}, crdb, prefix, ledger.NewMemory())
	return h, trips
}

// tripCounter counts round trips to Redis, those that read candidates (a
// scan of mode "nearest"), and the anchors each read (mode "anchors").
type tripCounter struct {
	mu           sync.Mutex
	all, nearest int
	anchors      []string
}

func (*tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds)
		return next(ctx, cmds)
	}
}

func (c *tripCounter) count(cmds []redis.Cmder) {
	near := slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return slices.Contains(cmd.Args(), any("nearest")) })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all++
	if near {
		c.nearest++
	}
	for _, cmd := range cmds {
		args := cmd.Args()
		if i := slices.Index(args, any("anchors")); i >= 0 && i+1 < len(args) {
			c.anchors = append(c.anchors, fmt.Sprint(args[i+1]))
		}
	}
}

func (c *tripCounter) anchorReads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.anchors)
}

func (c *tripCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all, c.nearest, c.anchors = 0, 0, nil
}

func (c *tripCounter) get() (all, nearest int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all, c.nearest
}
