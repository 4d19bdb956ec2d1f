package matcher_test

import (
	"context"
	"fmt"
	"slices"
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
	redistest.Both(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		trips := &tripCounter{}
		crdb := redis.NewClient(rdb.Options())
		defer crdb.Close()
		crdb.AddHook(trips)
		h := newHarnessWith(t, matcher.QueueConfig{
			Name: "duel", Players: 2, Regions: []string{"eu"},
			Window: &matcher.Window{Points: []matcher.WindowPoint{{After: 0, Width: 1000}}},
		}, crdb, prefix, ledger.NewMemory())
		const players = 300
		for i := range players {
			h.join(fmt.Sprint("u", i), float64(i%50))
			h.advance(time.Millisecond)
		}
		trips.reset()
		res := h.tick()
		// Rounds of 10, 20, 40 and 80 anchors seat everyone; the fifth
		// reads the empty rest.
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

// tripCounter counts round trips to Redis, and those that read candidates
// (a scan of mode "nearest").
type tripCounter struct {
	mu           sync.Mutex
	all, nearest int
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
}

func (c *tripCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all, c.nearest = 0, 0
}

func (c *tripCounter) get() (all, nearest int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all, c.nearest
}
