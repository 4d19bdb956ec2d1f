// Package group runs concurrent calls in shared batches without a goroutine
// of its own.
//
// A call arriving while Limit batches are running waits and goes into the
// next batch; a call that finds fewer running starts a batch at once, alone
// or with whoever waits. Nothing lingers to let a batch grow: batches form
// only from the calls that pile up behind the running ones, so an idle
// system answers each call as fast as a direct one and a busy one pays a
// batch's fixed cost (a round trip, a log flush) once for many calls.
//
// The goroutine of a waiting call runs the next batch when its turn comes:
// the turn is handed from one caller to the next, so no goroutine outlives
// the calls it serves.
package group

import (
	"context"
	"sync"
	"time"
)

// Group batches calls of Req answered by Res.
type Group[Req, Res any] struct {
	run     func(ctx context.Context, reqs []Req) []Res
	limit   int
	max     int
	timeout time.Duration

	mu      sync.Mutex
	pending []*call[Req, Res]
	running int // callers running a batch now
}

type call[Req, Res any] struct {
	req Req
	// done receives the result; lead, that this caller runs the next batch
	// (once: leading records that it was told, under Group.mu).
	done    chan Res
	lead    chan struct{}
	leading bool
	taken   bool // in a batch already
}

// New returns a Group that runs at most limit batches at once, each of at
// most max ≥ limit calls, through run. run must return one result per request, in
// order. Its context is the context of the caller that runs the batch
// without its cancellation, bounded by timeout: a batch carries other
// callers' requests, so one caller giving up must not abort it.
func New[Req, Res any](limit, max int, timeout time.Duration, run func(ctx context.Context, reqs []Req) []Res) *Group[Req, Res] {
	if limit < 1 || max < limit || timeout <= 0 {
		panic("group: want 1 ≤ limit ≤ max and a positive timeout")
	}
	return &Group[Req, Res]{run: run, limit: limit, max: max, timeout: timeout}
}

// Do runs req in a batch and returns its result. It returns only once the
// batch holding req has run, whatever ctx does.
func (g *Group[Req, Res]) Do(ctx context.Context, req Req) Res {
	c := &call[Req, Res]{req: req, done: make(chan Res, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if g.running < g.limit {
		g.running++
		c.leading = true
		c.lead <- struct{}{}
	}
	g.mu.Unlock()
	for {
		select {
		case r := <-c.done:
			return r
		case <-c.lead:
			g.runBatch(context.WithoutCancel(ctx), c)
		}
	}
}

// runBatch runs the oldest pending calls, the caller's among them unless
// an earlier batch took it or more than max wait before it. The turn then
// stays with the caller while its own call waits, else passes to the next
// waiting call, if any.
func (g *Group[Req, Res]) runBatch(ctx context.Context, self *call[Req, Res]) {
	g.mu.Lock()
	n := min(len(g.pending), g.max)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	for _, c := range batch {
		c.taken = true
	}
	g.mu.Unlock()

	if n > 0 {
		reqs := make([]Req, n)
		for i, c := range batch {
			reqs[i] = c.req
		}
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		res := g.run(ctx, reqs)
		cancel()
		if len(res) != n {
			panic("group: run returned a result count unlike its request count")
		}
		for i, c := range batch {
			c.done <- res[i]
		}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if !self.taken {
		self.lead <- struct{}{}
		return
	}
	for _, next := range g.pending {
		if !next.leading {
			next.leading = true
			next.lead <- struct{}{}
			return
		}
	}
	// Nobody left to hand to (or the next is already told): one runner fewer.
	g.running--
}
