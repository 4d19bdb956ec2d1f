package group_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchgate/matchgate/internal/group"
)

// Every caller gets the result of its own request, and calls that pile up
// behind a running batch share the next one.
func TestCallsShareBatches(t *testing.T) {
	var batches, maxSize, running, maxRunning atomic.Int64
	g := group.New(2, 16, time.Minute, func(_ context.Context, reqs []int) []string {
		r := running.Add(1)
		defer running.Add(-1)
		raise(&maxRunning, r)
		raise(&maxSize, int64(len(reqs)))
		batches.Add(1)
		time.Sleep(2 * time.Millisecond) // a round trip
		out := make([]string, len(reqs))
		for i, q := range reqs {
			out[i] = fmt.Sprint(q)
		}
		return out
	})
	const callers, per = 40, 25
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range per {
				req := c*per + i
				if got := g.Do(context.Background(), req); got != fmt.Sprint(req) {
					t.Errorf("request %d answered %q", req, got)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls in %d batches, largest %d, %d running at most", callers*per, batches.Load(), maxSize.Load(), maxRunning.Load())
	if batches.Load() >= callers*per/2 {
		t.Errorf("%d calls in %d batches: calls did not share batches", callers*per, batches.Load())
	}
	if maxSize.Load() > 16 || maxRunning.Load() > 2 {
		t.Errorf("largest batch %d (max 16), %d batches at once (limit 2)", maxSize.Load(), maxRunning.Load())
	}
}

// Calls that pile up behind a running batch, more than a batch holds, are
// all run: each batch hands the turn on to the next waiting call.
func TestTurnPassesThroughFullBatches(t *testing.T) {
	release := make(chan struct{})
	var first atomic.Bool
	var batches atomic.Int64
	g := group.New(1, 2, time.Minute, func(_ context.Context, reqs []int) []int {
		batches.Add(1)
		if first.CompareAndSwap(false, true) {
			<-release // hold the only turn while the others pile up
		}
		return reqs
	})
	done := make(chan int, 10)
	go func() { done <- g.Do(context.Background(), 0) }()
	for !first.Load() {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 6; i++ {
		go func() { done <- g.Do(context.Background(), i) }()
	}
	time.Sleep(20 * time.Millisecond) // let them all queue
	close(release)
	timeout := time.After(10 * time.Second)
	for range 6 {
		select {
		case <-done:
		case <-timeout:
			t.Fatal("a call was left waiting with no batch to run it")
		}
	}
	if n := batches.Load(); n != 4 {
		t.Fatalf("%d batches, want 4: the held one, then the five waiting two by two", n)
	}
}

// A cancelled caller still gets its result: its request may already be in
// a batch with others'.
func TestCancelledCallerWaitsForItsBatch(t *testing.T) {
	g := group.New(1, 8, time.Minute, func(ctx context.Context, reqs []int) []error {
		out := make([]error, len(reqs))
		for i := range out {
			out[i] = ctx.Err()
		}
		return out
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Do(ctx, 1); err != nil {
		t.Fatalf("batch of a cancelled caller ran with %v", err)
	}
}

func raise(v *atomic.Int64, to int64) {
	for {
		cur := v.Load()
		if to <= cur || v.CompareAndSwap(cur, to) {
			return
		}
	}
}

// With a linger, calls arriving one by one faster than one a linger share
// batches far larger than those that pile up behind a running batch.
func TestLingerGathersSteadyCalls(t *testing.T) {
	batches := func(linger time.Duration) int64 {
		var n atomic.Int64
		g := group.New(1, 512, time.Minute, func(_ context.Context, reqs []int) []int {
			n.Add(1)
			time.Sleep(time.Millisecond) // a round trip
			return reqs
		}).WithLinger(linger)
		var wg sync.WaitGroup
		for i := range 300 {
			wg.Go(func() {
				if got := g.Do(context.Background(), i); got != i {
					t.Errorf("request %d answered %d", i, got)
				}
			})
			time.Sleep(200 * time.Microsecond)
		}
		wg.Wait()
		return n.Load()
	}
	without, with := batches(0), batches(20*time.Millisecond)
	t.Logf("300 calls 0.2 ms apart: %d batches without a linger, %d with 20 ms", without, with)
	if with*4 > without {
		t.Errorf("a 20 ms linger ran %d batches against %d without: calls did not gather", with, without)
	}
}

// Calls further apart than the linger do not wait for company.
func TestLingerSparesSparseCalls(t *testing.T) {
	g := group.New(1, 64, time.Minute, func(_ context.Context, reqs []int) []int { return reqs }).WithLinger(300 * time.Millisecond)
	for i := range 3 {
		if i > 0 {
			time.Sleep(400 * time.Millisecond)
		}
		start := time.Now()
		g.Do(context.Background(), i)
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("call %d, after a pause longer than the linger, took %v: it lingered", i, d)
		}
	}
}

// One caller calling again and again, faster than one a linger, does not
// wait for company: none can come while it waits.
func TestLingerSparesSequentialCaller(t *testing.T) {
	g := group.New(1, 64, time.Minute, func(_ context.Context, reqs []int) []int { return reqs }).WithLinger(50 * time.Millisecond)
	start := time.Now()
	for i := range 200 {
		if got := g.Do(context.Background(), i); got != i {
			t.Fatalf("request %d answered %d", i, got)
		}
	}
	// Lingering, the calls would take 200 × 50 ms = 10 s.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("200 calls one after another took %v: they lingered", d)
	}
}
