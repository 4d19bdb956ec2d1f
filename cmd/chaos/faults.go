package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Fault kinds.
const (
	faultKillMatcher = "kill-matcher"
	faultKillGateway = "kill-gateway"
	faultWipe        = "wipe"
)

// faultEvent is one fault as it happened, for the report's timeline.
type faultEvent struct {
	At     dur    `json:"at"` // since the start of the load
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Note   string `json:"note,omitempty"`
}

// faults injects the schedule: a matcher kill every KillEvery, GatewayKills
// gateway kills spread evenly, and one wipe at WipeAt. Killed processes are
// restarted after a random moment up to RestartAfter, in goroutines that
// wait() waits for.
type faults struct {
	c    *cluster
	d    *deps
	o    options
	rng  *rand.Rand
	logf func(string, ...any)

	wg sync.WaitGroup
	mu sync.Mutex

	events                            []faultEvent
	matcherKills, gatewayKills, wipes int
	wipedKeys, restarts               int
	errs                              []string
}

type plannedFault struct {
	at   time.Duration
	kind string
	n    int
}

func (f *faults) plan() []plannedFault {
	var ps []plannedFault
	if f.o.KillEvery > 0 {
		for t := f.o.KillEvery; t < f.o.Duration; t += f.o.KillEvery {
			ps = append(ps, plannedFault{at: t, kind: faultKillMatcher})
		}
	}
	for i := 1; i <= f.o.GatewayKills; i++ {
		ps = append(ps, plannedFault{at: f.o.Duration * time.Duration(i) / time.Duration(f.o.GatewayKills+1), kind: faultKillGateway, n: i})
	}
	if f.o.WipeAt >= 0 {
		ps = append(ps, plannedFault{at: f.o.WipeAt, kind: faultWipe})
	}
	slices.SortStableFunc(ps, func(a, b plannedFault) int { return int(a.at - b.at) })
	return ps
}

// run injects the planned faults until ctx (the load phase) ends; restarts
// use life, the run's own context, so they finish after the load.
func (f *faults) run(ctx, life context.Context, start time.Time) {
	for _, pf := range f.plan() {
		if !sleepCtx(ctx, time.Until(start.Add(pf.at))) {
			return
		}
		switch pf.kind {
		case faultKillMatcher:
			var up []*proc
			for _, p := range f.c.byRole(roleMatcher) {
				if p.isRunning() {
					up = append(up, p)
				}
			}
			if len(up) == 0 {
				f.note(start, pf.kind, "-", "no matcher running: skipped")
				continue
			}
			f.kill(life, start, up[f.rng.IntN(len(up))], pf.kind)
		case faultKillGateway:
			gws := f.c.byRole(roleGateway)
			p := gws[pf.n%len(gws)]
			if !p.isRunning() {
				p = gws[(pf.n+1)%len(gws)]
			}
			f.kill(life, start, p, pf.kind)
		case faultWipe:
			n, err := f.d.wipe(ctx, f.o.WipeMode)
			f.mu.Lock()
			f.wipes++
			f.wipedKeys += n
			f.mu.Unlock()
			note := fmt.Sprintf("%d keys, %s", n, f.o.WipeMode)
			if err != nil {
				note += "; " + err.Error()
				f.fail("wipe: %v", err)
			}
			f.note(start, pf.kind, f.d.prefix+"*", note)
		}
	}
}

func (f *faults) kill(life context.Context, start time.Time, p *proc, kind string) {
	if err := f.c.kill9(p); err != nil {
		f.fail("kill %s: %v", p.name, err)
		return
	}
	f.mu.Lock()
	if kind == faultKillMatcher {
		f.matcherKills++
	} else {
		f.gatewayKills++
	}
	f.mu.Unlock()
	delay := time.Duration(f.rng.Int64N(int64(f.o.RestartAfter)+1))/2 + f.o.RestartAfter/2
	f.note(start, kind, p.name, fmt.Sprintf("restart in %s", delay.Round(time.Millisecond)))
	f.wg.Go(func() {
		if !sleepCtx(life, delay) {
			return // the run is over: nothing is restarted
		}
		if err := f.c.restart(life, p); err != nil {
			f.fail("restart %s: %v", p.name, err)
			return
		}
		f.mu.Lock()
		f.restarts++
		f.mu.Unlock()
	})
}

func (f *faults) note(start time.Time, kind, target, note string) {
	e := faultEvent{At: dur(time.Since(start)), Kind: kind, Target: target, Note: note}
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
	f.logf("fault at %s: %s %s (%s)", e.At, kind, target, note)
}

func (f *faults) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.mu.Lock()
	f.errs = append(f.errs, msg)
	f.mu.Unlock()
	f.logf("fault error: %s", msg)
}

// wait waits for the pending restarts.
func (f *faults) wait() { f.wg.Wait() }
