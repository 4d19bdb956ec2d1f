package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// health pings the dependencies in the background so that joins and /readyz
// learn of an outage at once, without each request waiting on a timeout.
// One slow answer on a busy machine is not an outage: a dependency counts as
// down after two failed checks in a row.
type health struct {
	checks map[string]func(context.Context) error
	every  time.Duration

	mu       sync.Mutex
	err      error
	failures int
}

func newHealth(every time.Duration, checks map[string]func(context.Context) error) *health {
	return &health{checks: checks, every: every}
}

// Err is the latest problem, nil when every dependency answered.
func (h *health) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Run checks every period until ctx ends.
func (h *health) Run(ctx context.Context) error {
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		h.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (h *health) check(ctx context.Context) {
	var firstErr error
	for name, check := range h.checks {
		cctx, cancel := context.WithTimeout(ctx, 2*h.every)
		err := check(cctx)
		cancel()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", name, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if firstErr == nil {
		h.failures, h.err = 0, nil
		return
	}
	h.failures++
	if h.failures >= 2 {
		h.err = firstErr
	}
}
