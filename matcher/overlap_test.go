package matcher_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/redistest"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/ledger"
)

// slowCommits is a ledger whose batch commits take a while and count how
// often a pass was begun (a pool read) while one was in flight.
type slowCommits struct {
	matcher.Ledger
	inflight, overlapped, commits atomic.Int64
}

func (s *slowCommits) CommitMatches(ctx context.Context, ms []matcher.Match, epoch int64) ([]matcher.CommitResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	s.commits.Add(1)
	time.Sleep(20 * time.Millisecond)
	return s.Ledger.CommitMatches(ctx, ms, epoch)
}

// Run commits a pass while the next one reads and claims: joins arriving
// all along are matched exactly once each, the next pass does not wait for
// the commit, and stopping Run waits for the commit in flight.
func TestRunOverlapsCommitWithNextPass(t *testing.T) {
	led := &slowCommits{Ledger: ledger.NewMemory()}
	h := newHarnessWith(t, matcher.QueueConfig{Name: "q", Players: 2, Tick: 10 * time.Millisecond}, redistest.Mini(t), "mg", led)
	e := h.engines["global"]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) })

	const pairs = 60
	var tickets []matcher.Ticket
	for i := range 2 * pairs {
		tickets = append(tickets, h.join(fmt.Sprint("u", i), 1500+float64(i%7)))
		if i%2 == 1 {
			e.Wake()
			if led.inflight.Load() > 0 {
				led.overlapped.Add(1) // a join (and its wake) while a commit runs
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.pushed.count() < pairs && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if led.inflight.Load() != 0 {
		t.Fatal("Run returned with a commit in flight")
	}
	seatedIn := map[string]string{}
	for _, tk := range tickets {
		got := h.ticket(tk.ID)
		if got.Status != matcher.StatusMatched {
			t.Fatalf("ticket %s is %s after Run stopped", tk.ID, got.Status)
		}
		seatedIn[tk.ID] = got.MatchID
	}
	matches := map[string]int{}
	for _, m := range seatedIn {
		matches[m]++
	}
	for m, n := range matches {
		if n != 2 {
			t.Fatalf("match %s seats %d of the tickets", m, n)
		}
	}
	if h.pushed.count() != pairs {
		t.Fatalf("%d match.found events, want %d", h.pushed.count(), pairs)
	}
	t.Logf("%d pairs in %d commits; %d joins arrived during a commit", pairs, led.commits.Load(), led.overlapped.Load())
}
