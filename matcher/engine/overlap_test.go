package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// slowCommits is a ledger whose batch commits take a while.
type slowCommits struct {
	matcher.Ledger
	inflight, commits atomic.Int64
}

func (s *slowCommits) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.commits.Add(1)
	time.Sleep(20 * time.Millisecond)
	return s.Ledger.CommitMatches(ctx, ms, epoch)
}

// Run commits a pass while the next one reads and claims: a pass begins
// while tickets claimed by the one before are still WAITING in the record,
// every ticket ends in exactly one match, and stopping Run waits for the
// commit in flight.
func TestRunOverlapsCommitWithNextPass(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Mini(t)
	mem := ledger.NewMemory()
	led := &slowCommits{Ledger: mem}
	h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2}}, rdb, "mg", led)
	part := matcher.Partition{Queue: "q", Region: "global"}
	// More pairs than one pass seats, all waiting before Run starts.
	const pairs = 200
	var tickets []matcher.Ticket
	for i := range 2 * pairs {
		tickets = append(tickets, h.join(fmt.Sprint("u", i), 1500))
	}

	// The fence is read as every pass begins. A pass begun while the
	// record still has WAITING tickets the pool no longer holds (claimed)
	// began during the commit of the pass before; a synchronous pass never
	// does.
	const token = 1
	if err := rdb.Set(ctx, h.pool.FenceKey(part.String()), token, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := mem.SetLeaseEpoch(ctx, part.String(), token); err != nil {
		t.Fatal(err)
	}
	var overlapped atomic.Int64
	e, err := engine.NewEngine(engine.EngineConfig{
		Deps:   engine.Deps{Pool: h.pool, Ledger: led, Notifier: h.pushed, Presence: h.seen, Now: h.clock},
		Queue:  h.q,
		Region: "global",
		Fence: func() int64 {
			waiting, err := mem.Waiting(ctx, part)
			if err != nil {
				t.Error(err)
			}
			pooled, err := h.pool.Size(ctx, part.String())
			if err != nil {
				t.Error(err)
			}
			if int64(len(waiting)) > pooled {
				overlapped.Add(1)
			}
			return token
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(runCtx) })
	e.Wake()
	for deadline := time.Now().Add(10 * time.Second); h.pushed.count() < pairs && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	if led.inflight.Load() != 0 {
		t.Fatal("Run returned with a commit in flight")
	}
	if overlapped.Load() == 0 {
		t.Fatalf("no pass began during one of %d commits", led.commits.Load())
	}
	matches := map[string]int{}
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		if got.Status != matcher.StatusMatched {
			t.Fatalf("ticket %s is %s after Run stopped", tk.ID, got.Status)
		}
		matches[got.MatchID]++
	}
	for m, n := range matches {
		if n != 2 {
			t.Fatalf("match %s seats %d of the tickets", m, n)
		}
	}
	if h.pushed.count() != pairs {
		t.Fatalf("%d match.found events, want %d", h.pushed.count(), pairs)
	}
	t.Logf("%d pairs in %d commits; %d passes began during a commit", pairs, led.commits.Load(), overlapped.Load())
}
