package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/matcher/engine"
	"github.com/matchgate/matchgate/matcher/ledger"
	"github.com/matchgate/matchgate/matcher/pool"
)

// countingPool counts the passes that read the head of the pool.
type countingPool struct {
	engine.Pool
	heads atomic.Int64
}

func (p *countingPool) ScanMany(ctx context.Context, partition string, scans []pool.Scan) ([][]matcher.Entry, error) {
	p.heads.Add(1)
	return p.Pool.ScanMany(ctx, partition, scans)
}

// Wakes a millisecond apart start a pass at most every passGap, not one
// each: over 300 ms of them with a 100 ms gap, between two and five
// passes (hundreds without the gap).
func TestRunHoldsWakesToThePassGap(t *testing.T) {
	cfg := matcher.Config{Queues: []matcher.QueueConfig{{Name: "q", Timing: matcher.Timing{Tick: time.Minute, PassGap: 100 * time.Millisecond}}}}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	q := cfg.Queues[0]
	p := &countingPool{Pool: pool.NewMemory(time.Now, 0)}
	e, err := engine.NewEngine(engine.EngineConfig{Queue: q, Region: "global", Deps: engine.Deps{Pool: p, Ledger: ledger.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { _ = e.Run(ctx) })
	defer run.Wait()
	defer cancel()

	e.Wake()
	for deadline := time.Now().Add(5 * time.Second); p.heads.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no pass for the first wake")
		}
	}
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; time.Sleep(time.Millisecond) {
		e.Wake()
	}
	if n := p.heads.Load(); n < 2 || n > 5 {
		t.Fatalf("%d passes for 300 ms of wakes a millisecond apart, want 2–5 with a 100 ms pass gap", n)
	}
}

// A backlog is not held back: 1,000 players waiting, a pass seats at most
// 256, and with a minute's gap (and tick) every one is matched within
// seconds, each pass that ended on a dense head followed at once. An
// anchorDepth of 100 keeps the next pass's first round at 100, so the
// backlog is told by the last round, not by the depth.
func TestRunDoesNotHoldABacklog(t *testing.T) {
	h := newHarness(t, matcher.QueueConfig{Name: "q", Seats: matcher.Seats{Players: 2},
		SkillRules: matcher.SkillRules{AnchorDepth: 100},
		Timing:     matcher.Timing{Tick: time.Minute, PassGap: time.Minute}})
	var tickets []matcher.Ticket
	for i := range 1000 {
		tickets = append(tickets, h.join(fmt.Sprint("p", i), 100))
	}
	e, err := engine.NewEngine(engine.EngineConfig{Deps: engine.Deps{Pool: h.pool, Ledger: h.led, Now: h.clock},
		Queue: h.q, Region: "global"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { _ = e.Run(ctx) })
	defer run.Wait()
	defer cancel()
	e.Wake()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		waiting := 0
		for _, tk := range tickets {
			if h.ticket(tk.ID).Status == matcher.StatusWaiting {
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 1,000 still waiting after 20 s: the backlog's passes were held to the minute's gap", waiting)
		}
	}
}
