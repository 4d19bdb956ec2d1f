package main

import (
	"context"
	"time"
)

// pacer issues events at a constant rate from a start instant: an open
// model. Event i is due at start + i/rate whether or not earlier events have
// finished, so a slow server shows up as latency and missed targets, never as
// a quietly lower request rate (no coordinated omission).
type pacer struct {
	rate  float64 // events per second, > 0
	total int     // events to issue; 0 means unbounded (until end)
	// minStep is the shortest sleep between two wake-ups; events that fall
	// due meanwhile are issued together. Default 1ms.
	minStep time.Duration
	// now and sleep are the clock; nil means the real one.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration)
}

// offset is when event i is due, relative to the start.
func (p pacer) offset(i int) time.Duration {
	return time.Duration(float64(i) / p.rate * float64(time.Second))
}

// due is how many events are due once elapsed has passed since the start:
// event 0 is due at once.
func (p pacer) due(elapsed time.Duration) int {
	if elapsed < 0 {
		return 0
	}
	// The epsilon absorbs the rounding of offset, so that event i is due
	// exactly at offset(i).
	n := int(elapsed.Seconds()*p.rate+1e-6) + 1
	if p.total > 0 && n > p.total {
		n = p.total
	}
	return n
}

// run issues events from start until total are issued, end passes or ctx
// ends, calling fire with each event's index and the instant it was due
// (latencies are measured from that instant). It returns the number issued.
func (p pacer) run(ctx context.Context, start, end time.Time, fire func(i int, due time.Time)) int {
	now, sleep := p.now, p.sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	step := p.minStep
	if step <= 0 {
		step = time.Millisecond
	}
	issued := 0
	for ctx.Err() == nil {
		t := now()
		for n := p.due(t.Sub(start)); issued < n; issued++ {
			at := start.Add(p.offset(issued))
			if !at.Before(end) {
				return issued
			}
			fire(issued, at)
		}
		if (p.total > 0 && issued >= p.total) || !t.Before(end) {
			return issued
		}
		wait := start.Add(p.offset(issued)).Sub(now())
		sleep(ctx, min(max(wait, step), end.Sub(now())))
	}
	return issued
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
