package main

import (
	"context"
	"fmt"
	"time"
)

// settle ends the run's active part: it waits until every ticket is
// resolved (or the last deadline plus slack has passed: the checks then
// report what still waits), until every player that has not given up is
// connected again (ghosts come back), and then a grace period for pushes in
// flight (the relay publishes what a killed matcher left in the outbox).
func settle(ctx context.Context, d *deps, s *sim, o options, logf func(string, ...any)) error {
	if !sleepCtx(ctx, 2*time.Second) { // joins sent just before the stop
		return ctx.Err()
	}
	for {
		waiting, last, err := waitingState(ctx, d.pg)
		if err != nil {
			return fmt.Errorf("read waiting tickets: %w", err)
		}
		now := time.Now()
		if waiting == 0 {
			if last.After(now) {
				logf("every ticket resolved, %s before the last deadline", last.Sub(now).Round(time.Millisecond))
			} else {
				logf("every ticket resolved, %s after the last deadline", now.Sub(last).Round(time.Millisecond))
			}
			break
		}
		if now.After(last.Add(o.Slack)) {
			logf("%d tickets still WAITING %s after the last deadline", waiting, now.Sub(last).Round(time.Millisecond))
			break
		}
		if !sleepCtx(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	want := int64(o.Players)
	until := time.Now().Add(o.Heartbeat + 15*time.Second)
	for s.connected.Load() < want-s.gaveUp.Load() && time.Now().Before(until) {
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	if n := s.connected.Load(); n < want-s.gaveUp.Load() {
		logf("only %d of %d players connected at the end", n, want)
	}
	if !sleepCtx(ctx, 5*time.Second) {
		return ctx.Err()
	}
	return nil
}

// admissionSettle bounds the admission queue's settle: the whole line
// admitted at the rate, a walked-away waiter abandoned, and room for a
// slow machine.
func admissionSettle(o options) time.Duration {
	return o.AbandonAfter + time.Duration(o.Waiters/o.AdmitRate+1)*time.Second + 30*time.Second
}

// settleAdmission waits, after the load, until no place of the gate queue
// is WAITING and the downstream is done with every token it was handed,
// within admissionSettle: the checks then report what still waits.
func settleAdmission(ctx context.Context, d *deps, a *admSim, o options, logf func(string, ...any)) error {
	until := time.Now().Add(admissionSettle(o))
	for {
		waiting, err := admWaiting(ctx, d.pg)
		if err != nil {
			return fmt.Errorf("read waiting places: %w", err)
		}
		busy := a.inFlight.Load() > 0
		if waiting == 0 && !busy {
			logf("every admission place settled; the downstream is done")
			return nil
		}
		if time.Now().After(until) {
			logf("%d admission places still WAITING (downstream busy %v) after %s", waiting, busy, admissionSettle(o))
			return nil
		}
		if !sleepCtx(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
}
