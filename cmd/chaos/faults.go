package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault kinds.
const (
	faultKillMatcher  = "kill-matcher"
	faultKillGateway  = "kill-gateway"
	faultKillAdmitter = "kill-admitter" // the matcher holding the gate queue's admitter lease
	faultWipe         = "wipe"
	faultPG           = "pg-fault"     // a window of cut requests and lost replies at the PostgreSQL proxy
	faultAllocHang    = "alloc-hang"   // a window of hanging allocate calls at the fleet manager
	faultRetireQueue  = "retire-queue" // a queue retired through the admin API
)

// faultEvent is one fault as it happened, for the report's timeline.
type faultEvent struct {
	At     dur    `json:"at"` // since the start of the load
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Note   string `json:"note,omitempty"`
}

// faults injects the schedule: a matcher kill every KillEvery, GatewayKills
// gateway kills spread evenly, one wipe at WipeAt, one PostgreSQL fault
// window at PGFaultAt, one allocator hang window at AllocHangAt and one
// queue retired at RetireAt, and with waiters the admitter's holder killed
// every AdmitterKillEvery. Killed processes are restarted after a random
// moment up to RestartAfter, in goroutines that wait() waits for.
type faults struct {
	c     *cluster
	d     *deps
	o     options
	rng   *rand.Rand
	logf  func(string, ...any)
	proxy *pgProxy // nil without --pg-fault-for
	fleet *fleet
	sim   *sim
	admin string // the cluster's admin token

	wg     sync.WaitGroup
	mu     sync.Mutex
	killMu sync.Mutex // one kill at a time
	rngMu  sync.Mutex // rng, drawn by the fault loops

	events                            []faultEvent
	matcherKills, gatewayKills, wipes int
	admitterKills                     int
	killedLease                       string // the admitter lease whose holder was killed last (killAdmitters only)
	wipedKeys, restarts               int
	errs                              []string
	killedAt                          map[string]time.Time // by name.incarnation
	restarting                        map[string]bool      // by name: killed, its restart not over
	retiredAt                         time.Time
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
	if f.proxy != nil && f.o.PGFaultFor > 0 {
		ps = append(ps, plannedFault{at: f.o.PGFaultAt, kind: faultPG})
	}
	if f.fleet != nil && f.o.AllocHangFor > 0 {
		ps = append(ps, plannedFault{at: f.o.AllocHangAt, kind: faultAllocHang})
	}
	if f.o.RetireAt >= 0 {
		ps = append(ps, plannedFault{at: f.o.RetireAt, kind: faultRetireQueue})
	}
	slices.SortStableFunc(ps, func(a, b plannedFault) int { return int(a.at - b.at) })
	return ps
}

// run injects the planned faults until ctx (the load phase) ends; restarts
// use life, the run's own context, so they finish after the load. The
// admitter's holder is killed on a schedule of its own (killAdmitters).
func (f *faults) run(ctx, life context.Context, start time.Time) {
	if f.o.Waiters > 0 && f.o.AdmitterKillEvery > 0 {
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { f.killAdmitters(ctx, life, start) })
	}
	for _, pf := range f.plan() {
		if !sleepCtx(ctx, time.Until(start.Add(pf.at))) {
			return
		}
		switch pf.kind {
		case faultKillMatcher:
			var up []*proc
			for _, p := range f.c.byRole(roleMatcher) {
				if p.isRunning() && !f.isRestarting(p) {
					up = append(up, p)
				}
			}
			if len(up) == 0 {
				f.note(start, pf.kind, "-", "no matcher running: skipped")
				continue
			}
			f.kill(life, start, up[f.intN(len(up))], pf.kind)
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
		case faultPG:
			f.proxy.fault(f.o.PGFaultFor)
			f.note(start, pf.kind, "postgres proxy", fmt.Sprintf("for %s", f.o.PGFaultFor))
		case faultAllocHang:
			f.fleet.hang(f.o.AllocHangFor)
			f.note(start, pf.kind, "fleet manager", fmt.Sprintf("for %s, each call hangs %s", f.o.AllocHangFor, f.o.AllocHang))
		case faultRetireQueue:
			if err := f.retire(ctx); err != nil {
				f.fail("retire queue %s: %v", f.o.RetireQueue, err)
				continue
			}
			f.note(start, pf.kind, f.o.RetireQueue, "DELETE /v1/admin/queues/"+f.o.RetireQueue)
		}
	}
}

// killAdmitters kills the holder of gate's admitter lease every
// AdmitterKillEvery, or as soon as a holder takes the lease after that:
// a killed holder's lease lives on until it expires, so the kills come at
// most about a lease TTL (4 s) plus a takeover apart.
func (f *faults) killAdmitters(ctx, life context.Context, start time.Time) {
	next := start.Add(f.o.AdmitterKillEvery)
	for sleepCtx(ctx, time.Until(next)) {
		p, _ := f.admitterHolder(ctx)
		if p == nil {
			next = time.Now().Add(250 * time.Millisecond)
			continue
		}
		f.kill(life, start, p, faultKillAdmitter)
		next = time.Now().Add(f.o.AdmitterKillEvery)
	}
}

func (f *faults) isRestarting(p *proc) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restarting[p.name]
}

// intN draws from the faults' rng, shared by the fault loops.
func (f *faults) intN(n int) int {
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	return f.rng.IntN(n)
}

func (f *faults) kill(life context.Context, start time.Time, p *proc, kind string) {
	// One kill at a time: the admitter's kills run beside the others, and
	// a process they both chose dies once.
	f.killMu.Lock()
	defer f.killMu.Unlock()
	if !p.isRunning() || f.isRestarting(p) {
		// A process killed while its restart waits for it to serve
		// would fail that restart: the run kills running servers.
		f.note(start, kind, "-", p.name+" down or restarting: skipped")
		return
	}
	p.mu.Lock()
	inc := p.inc
	p.mu.Unlock()
	if err := f.c.kill9(p); err != nil {
		f.fail("kill %s: %v", p.name, err)
		return
	}
	f.mu.Lock()
	if f.killedAt == nil {
		f.killedAt = map[string]time.Time{}
	}
	f.killedAt[fmt.Sprintf("%s.%d", p.name, inc)] = time.Now()
	if f.restarting == nil {
		f.restarting = map[string]bool{}
	}
	f.restarting[p.name] = true
	switch kind {
	case faultKillMatcher:
		f.matcherKills++
	case faultKillAdmitter:
		f.admitterKills++
	default:
		f.gatewayKills++
	}
	f.mu.Unlock()
	f.rngMu.Lock()
	delay := time.Duration(f.rng.Int64N(int64(f.o.RestartAfter)+1))/2 + f.o.RestartAfter/2
	f.rngMu.Unlock()
	delay = f.clearOfPGFault(start, delay)
	f.note(start, kind, p.name, fmt.Sprintf("restart in %s", delay.Round(time.Millisecond)))
	f.wg.Go(func() {
		defer func() {
			f.mu.Lock()
			delete(f.restarting, p.name)
			f.mu.Unlock()
		}()
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

// admitterHolder is the running matcher that holds the gate queue's
// admitter lease, read from Redis (admission/line/redis.go: the value is
// "<owner> <token> <expiry, unix ms>", the owner "<--node>-<random>", and
// each matcher runs with --node set to its name); nil with the reason when
// nobody holds it now.
func (f *faults) admitterHolder(ctx context.Context) (*proc, string) {
	v, err := f.d.rdb.Get(ctx, f.d.prefix+":{adm:"+gateQueue+"}:lease").Result()
	if err != nil {
		return nil, "no admitter lease (" + err.Error() + ")"
	}
	fields := strings.Fields(v)
	if len(fields) != 3 {
		return nil, fmt.Sprintf("admitter lease %q unreadable", v)
	}
	if exp, err := strconv.ParseInt(fields[2], 10, 64); err != nil || time.UnixMilli(exp).Before(time.Now()) {
		return nil, "admitter lease expired"
	}
	if v == f.killedLease {
		return nil, "the lease of the holder killed last has not expired yet"
	}
	owner := fields[0]
	if i := strings.LastIndexByte(owner, '-'); i > 0 {
		owner = owner[:i]
	}
	for _, p := range f.c.byRole(roleMatcher) {
		if p.name == owner {
			if !p.isRunning() || f.isRestarting(p) {
				return nil, owner + " holds the admitter lease but is down or restarting"
			}
			f.killedLease = v // only the fault loop reads it
			return p, ""
		}
	}
	return nil, fmt.Sprintf("admitter lease held by %q, no matcher of the run", owner)
}

// faultTimes are the instants of the kills and the wipe: the moments a
// waiter may come back to the admission line out of order.
func (f *faults) faultTimes(start time.Time) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, e := range f.events {
		switch e.Kind {
		case faultKillMatcher, faultKillAdmitter, faultKillGateway, faultWipe:
			if e.Target != "-" {
				out = append(out, start.Add(time.Duration(e.At)))
			}
		}
	}
	return out
}

// wait waits for the pending restarts.
func (f *faults) wait() { f.wg.Wait() }

// retire stops the players joining the queue and retires it through the
// admin API of a running gateway (README "Security": queue changes).
func (f *faults) retire(ctx context.Context) error {
	q := f.o.RetireQueue
	f.sim.retired.Store(&q) // first: no join of it goes out from now on
	at := time.Now()
	var errs []error
	for _, p := range f.c.byRole(roleGateway) {
		if !p.isRunning() {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodDelete, "http://"+p.addr+"/v1/admin/queues/"+q, nil)
		if err != nil {
			cancel()
			return err
		}
		req.Header.Set("Authorization", "Bearer "+f.admin)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("%s answered %d", p.name, resp.StatusCode))
			continue
		}
		f.mu.Lock()
		f.retiredAt = at
		f.mu.Unlock()
		return nil
	}
	return errors.Join(append(errs, errors.New("no running gateway took the request"))...)
}

// clearOfPGFault moves a restart due after delay out of the PostgreSQL
// fault window (and the 3 s before it, the time a start takes): a server
// exits when PostgreSQL fails it at start, by design, and its supervisor
// would start it again; the run tests the running servers, not that loop.
func (f *faults) clearOfPGFault(start time.Time, delay time.Duration) time.Duration {
	if f.proxy == nil || f.o.PGFaultFor == 0 {
		return delay
	}
	at := time.Since(start) + delay
	from, to := f.o.PGFaultAt-3*time.Second, f.o.PGFaultAt+f.o.PGFaultFor+500*time.Millisecond
	if at >= from && at < to {
		return delay + to - at
	}
	return delay
}
