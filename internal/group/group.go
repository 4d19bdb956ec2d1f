// Package group runs concurrent calls in shared batches without a goroutine
// of its own.
//
// A call arriving while Limit batches are running waits and goes into the
// next batch; a call that finds fewer running starts a batch at once, alone
// or with whoever waits. By default nothing lingers to let a batch grow:
// batches form only from the calls that pile up behind the running ones, so
// an idle system answers each call as fast as a direct one and a busy one
// pays a batch's fixed cost (a round trip, a log flush) once for many calls.
//
// With a linger (WithLinger), a runner about to take a batch first waits
// until the oldest pending call is a linger old, but only while calls come
// faster than one a linger from callers that overlap: a lone or slow caller
// is never held back.
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

	linger time.Duration

	mu      sync.Mutex
	pending []*call[Req, Res]
	running int // callers running a batch now
	// last and gap: when the last call arrived, and a moving mean of the
	// time between calls; busy, a moving share of the calls that found a
	// batch running (kept only with a linger).
	last time.Time
	gap  time.Duration
	busy float64
}

type call[Req, Res any] struct {
	req Req
	at  time.Time // arrival, kept only with a linger
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

// WithLinger sets the linger (see the package comment) and returns g. Call
// it before the first Do.
func (g *Group[Req, Res]) WithLinger(d time.Duration) *Group[Req, Res] {
	g.linger = d
	g.gap = d // no linger until calls come faster than one a linger
	return g
}

// Do runs req in a batch and returns its result. It returns only once the
// batch holding req has run, whatever ctx does.
func (g *Group[Req, Res]) Do(ctx context.Context, req Req) Res {
	c := &call[Req, Res]{req: req, done: make(chan Res, 1), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	if g.linger > 0 {
		c.at = time.Now()
		if !g.last.IsZero() {
			// A mean over about the last eight calls, a gap counted at
			// most a second so that one pause does not stall the mean.
			g.gap += (min(c.at.Sub(g.last), time.Second) - g.gap) / 8
		}
		g.last = c.at
		found := 0.0
		if g.running > 0 {
			found = 1
		}
		g.busy += (found - g.busy) / 8
	}
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
	if wait := g.lingerFor(); wait > 0 {
		g.mu.Unlock()
		time.Sleep(wait)
		g.mu.Lock()
	}
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

// lingerFor tells how long a runner about to take a batch waits for more
// calls: until the oldest pending call is a linger old, while calls come
// faster than one a linger from callers that overlap (a quarter of them
// find a batch running: one caller calling again and again never does, and
// would only wait for itself), and the batch is not full. Called under g.mu.
func (g *Group[Req, Res]) lingerFor() time.Duration {
	if g.linger == 0 || len(g.pending) == 0 || len(g.pending) >= g.max || g.gap >= g.linger || g.busy < 0.25 {
		return 0
	}
	return g.linger - time.Since(g.pending[0].at)
}
