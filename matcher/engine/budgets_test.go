package engine_test

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
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// hangingAllocator answers its first call with a server and hangs every
// later one until its context ends. Like a client of a real fleet manager,
// it fails a call (a release too) whose context is already done.
type hangingAllocator struct {
	mu                  sync.Mutex
	calls, ok, released int
	deadOnEntry         int // calls made on a context already done
	hungOut             int // calls that hung until their context ended
	deadlines           []time.Time
}

func (a *hangingAllocator) Allocate(ctx context.Context, req engine.AllocationRequest) (matcher.Server, error) {
	a.mu.Lock()
	a.calls++
	first := a.calls == 1
	if d, ok := ctx.Deadline(); ok {
		a.deadlines = append(a.deadlines, d)
	}
	if ctx.Err() != nil {
		a.deadOnEntry++
	}
	a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return matcher.Server{}, err
	}
	if !first {
		<-ctx.Done()
		a.mu.Lock()
		a.hungOut++
		a.mu.Unlock()
		return matcher.Server{}, ctx.Err()
	}
	a.mu.Lock()
	a.ok++
	a.mu.Unlock()
	return matcher.Server{Address: "10.0.0.1:7777", Session: "s-" + req.MatchID}, nil
}

func (a *hangingAllocator) Release(ctx context.Context, _ string, _ matcher.Server) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.mu.Lock()
	a.released++
	a.mu.Unlock()
	return nil
}

// counts tells the calls, the servers handed out and released, and the
// calls that ended with their context: made on a dead one, or hung until
// it died.
func (a *hangingAllocator) counts() (calls, ok, released, dead int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.ok, a.released, a.deadOnEntry + a.hungOut
}

// refusingLedger refuses every commit as if the lease had moved (nothing
// written), so every allocated server must be released; like a real
// database it fails a commit whose context is done.
type refusingLedger struct{ matcher.Ledger }

func (r refusingLedger) CommitMatches(ctx context.Context, ms []matcher.Match, _ int64) ([]matcher.CommitResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("commit %d matches: %w", len(ms), err)
	}
	out := make([]matcher.CommitResult, len(ms))
	for i := range out {
		out[i].Err = matcher.ErrStaleEpoch
	}
	return out, nil
}

// A fleet manager that hangs outlasts a pass's budget: the pass's context
// dies with groups claimed and a server allocated. The commit, the releases
// and the requeues still run, on budgets of their own: after the passes
// nobody has left the pool, and every allocated server was released.
func TestPassPastItsBudgetPutsEveryoneBack(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		mem := ledger.NewMemory()
		q := matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}, Timing: matcher.Timing{Tick: 20 * time.Millisecond}}
		h := newHarnessWith(t, q, rdb, prefix, mem)
		alloc := &hangingAllocator{}
		eng, err := engine.NewEngine(engine.EngineConfig{
			Deps:   engine.Deps{Pool: h.pool, Ledger: refusingLedger{mem}, Allocator: alloc, Presence: h.seen, Now: h.clock},
			Queue:  h.q,
			Region: "global",
			// The allocations' budget outlasts the pass's, so that the
			// pass's context dies while the allocations hang.
			PassTimeout:     300 * time.Millisecond,
			AllocateTimeout: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		var tickets []matcher.Ticket
		for i := range 12 {
			tickets = append(tickets, h.join(fmt.Sprint("p", i), 100))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx) }()
		// Until a pass has run past its budget (allocations hung until its
		// context died, the allocations' own budget being longer), or give
		// up after a while.
		for i := 0; i < 1000; i++ {
			if _, _, _, dead := alloc.counts(); dead > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		calls, ok, released, dead := alloc.counts()
		t.Logf("%d allocations asked, %d answered, %d released, %d ended with their context", calls, ok, released, dead)
		if dead == 0 {
			t.Fatal("no pass ran past its budget")
		}
		if released != ok {
			t.Fatalf("%d servers allocated, %d released", ok, released)
		}
		for _, tk := range tickets {
			if !h.inPool("q:global", tk.ID) {
				t.Fatalf("ticket %s of %s has left the pool", tk.ID, tk.UserID)
			}
		}
	})
}

// The allocations of a pass share one budget: with the fleet manager
// hanging, the pass's groups do not hang in turn, each for a budget of
// its own (which held a pass, and every deadline behind it, for seconds per
// group), and all of them go back to the pool.
func TestPassAllocationsShareOneBudget(t *testing.T) {
	redistest.All(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		mem := ledger.NewMemory()
		q := matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}
		h := newHarnessWith(t, q, rdb, prefix, mem)
		alloc := &hangingAllocator{calls: 1} // every call hangs
		eng, err := engine.NewEngine(engine.EngineConfig{
			Deps:            engine.Deps{Pool: h.pool, Ledger: mem, Allocator: alloc, Presence: h.seen, Now: h.clock},
			Queue:           h.q,
			Region:          "global",
			AllocateTimeout: 50 * time.Millisecond,
			AllocateBackoff: []time.Duration{},
		})
		if err != nil {
			t.Fatal(err)
		}
		var tickets []matcher.Ticket
		for i := range 12 {
			tickets = append(tickets, h.join(fmt.Sprint("p", i), 100))
		}
		res, err := eng.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		alloc.mu.Lock()
		deadlines := slices.Clone(alloc.deadlines)
		alloc.mu.Unlock()
		if res.Matches != 0 || res.AllocationFailures < 2 || res.AllocationFailures != len(deadlines) {
			t.Fatalf("tick = %+v after %d allocations; want several failed and no match", res, len(deadlines))
		}
		for _, d := range deadlines {
			if !d.Equal(deadlines[0]) {
				t.Fatalf("allocations of one pass had deadlines %v, want one budget for all", deadlines)
			}
		}
		for _, tk := range tickets {
			if !h.inPool("q:global", tk.ID) {
				t.Fatalf("ticket %s of %s has left the pool", tk.ID, tk.UserID)
			}
		}
	})
}
