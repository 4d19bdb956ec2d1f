package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchgate/matchgate/protocol"
)

// Phases of a run, in order.
const (
	phaseStart   = "start"
	phaseConnect = "connect"
	phaseRun     = "run"
	phaseDrain   = "drain"
	phaseVerify  = "verify"
	phaseClose   = "close"
	phaseDone    = "done"
)

// runner drives the players of one process (the whole run, or one
// worker's share of it).
type runner struct {
	cfg    Config
	stats  *Stats
	check  *Checker
	dial   *dialer
	tokens tokenSource
	ctx    context.Context // ends at the hard deadline

	rngMu sync.Mutex
	rng   *rand.Rand

	players []*player
	idle    chan *player // players free to join; each at most once

	joinsOpen atomic.Bool  // the pacer may hand out joins
	closing   atomic.Bool  // sockets are being closed: no reconnects
	phase     atomic.Value // string
	wg        sync.WaitGroup

	connectSeconds, runSeconds float64
	runEnd                     time.Time
}

func newRunner(cfg Config) (*runner, error) {
	d, err := newDialer(cfg.SourceAddrs, 64)
	if err != nil {
		return nil, err
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	r := &runner{
		cfg: cfg, stats: NewStats(), check: NewChecker(), dial: d,
		tokens: tokenSource{secret: []byte(cfg.Secret), ttl: cfg.TokenTTL, client: d.rest},
		rng:    rand.New(rand.NewPCG(seed, uint64(cfg.WorkerIndex))),
	}
	r.phase.Store(phaseStart)
	n := cfg.Sockets + cfg.RestPlayers
	r.idle = make(chan *player, n)
	for i := range n {
		p := &player{r: r, idx: i, base: cfg.URLs[i%len(cfg.URLs)], rest: i >= cfg.Sockets,
			user:  fmt.Sprintf("lg-%s-%d-%d", cfg.RunID, cfg.WorkerIndex, i),
			skill: r.sampleSkill()}
		r.players = append(r.players, p)
	}
	return r, nil
}

// rand returns a generator for one use; callers must not keep it.
func (r *runner) rand() *rand.Rand {
	// One generator per call site would need locking anyway; a fresh PCG
	// seeded from the shared one keeps the stream deterministic per seed
	// without holding the lock while it is used.
	r.rngMu.Lock()
	a, b := r.rng.Uint64(), r.rng.Uint64()
	r.rngMu.Unlock()
	return rand.New(rand.NewPCG(a, b))
}

func (r *runner) sampleSkill() float64 {
	s := r.rng.NormFloat64()*r.cfg.SkillStddev + r.cfg.SkillMean
	return math.Max(0, math.Min(10000, s))
}

// pickQueue draws from the queue mix.
func (r *runner) pickQueue() QueueChoice {
	x := r.rand().Float64()
	for _, q := range r.cfg.Queues {
		if x < q.Weight {
			return q
		}
		x -= q.Weight
	}
	return r.cfg.Queues[len(r.cfg.Queues)-1]
}

func (r *runner) becameIdle(p *player) {
	p.mu.Lock()
	p.enqueueIdleLocked()
	p.mu.Unlock()
}

func (r *runner) setPhase(s string) { r.phase.Store(s) }

// Phase is the current phase.
func (r *runner) Phase() string { return r.phase.Load().(string) }

// run performs the whole run of this process: connect, the mode's measured
// phase, drain, verify, close. ctx is the hard deadline.
func (r *runner) run(ctx context.Context) *Report {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx = ctx
	start := time.Now()

	r.connectPhase(ctx)
	switch r.cfg.Mode {
	case modePlayers:
		r.playersPhase(ctx)
	case modePush:
		r.pushPhase(ctx)
	default:
		r.setPhase(phaseRun)
		runStart := time.Now()
		sleepCtx(ctx, r.cfg.Duration)
		r.runEnd = time.Now()
		r.runSeconds = r.runEnd.Sub(runStart).Seconds()
	}
	clientRSS, _ := vmRSS(os.Getpid())
	verified := 0
	if r.cfg.Mode == modePlayers {
		r.drainPhase(ctx)
		verified = r.verifyPhase(ctx)
	}
	r.closePhase()
	cancel()
	r.waitPlayers(10 * time.Second)
	r.setPhase(phaseDone)
	rep := r.report(start, verified)
	rep.ClientRSS = clientRSS
	return rep
}

// connectPhase opens the sockets at the connect rate and waits (bounded)
// for every connect to finish.
func (r *runner) connectPhase(ctx context.Context) {
	r.setPhase(phaseConnect)
	start := time.Now()
	n := r.cfg.Sockets
	if n > 0 {
		limit := time.Duration(float64(n)/r.cfg.ConnectRate*float64(time.Second)) + time.Second
		pc := pacer{rate: r.cfg.ConnectRate, total: n}
		pc.run(ctx, start, start.Add(limit), func(i int, due time.Time) {
			p := r.players[i]
			r.wg.Go(func() {
				if err := p.ensureToken(ctx); err != nil {
					r.stats.inc(cConnectFailed)
					r.stats.label(lDialErrors, "token")
					return
				}
				p.runSocket(ctx, due)
			})
		})
		// Wait for the stragglers, at most one connect timeout.
		deadline := time.Now().Add(r.cfg.ConnectTimeout + time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil &&
			r.stats.get(cConnects)+r.stats.get(cConnectFailed) < int64(n) {
			sleepCtx(ctx, 20*time.Millisecond)
		}
	}
	for _, p := range r.players[n:] {
		if err := p.ensureToken(ctx); err != nil {
			r.stats.label(lDialErrors, "token")
		}
	}
	r.connectSeconds = time.Since(start).Seconds()
}

// ensureToken gets the player's token if it has none yet.
func (p *player) ensureToken(ctx context.Context) error {
	if p.token != "" {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, p.r.cfg.ConnectTimeout)
	defer cancel()
	tok, user, err := p.r.tokens.token(tctx, p.base, p.user, p.skill)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.token, p.user = tok, user
	p.mu.Unlock()
	return nil
}

// identity returns the player's user id and token (set once, at connect).
func (p *player) identity() (user, token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.user, p.token
}

// playersPhase hands joins to idle players at the join rate for Duration.
func (r *runner) playersPhase(ctx context.Context) {
	r.setPhase(phaseRun)
	r.joinsOpen.Store(true)
	for _, p := range r.players {
		if _, tok := p.identity(); p.rest && tok != "" {
			p.mu.Lock()
			p.enqueueIdleLocked()
			p.mu.Unlock()
		} else if !p.rest {
			r.becameIdle(p) // enqueued only if connected and free
		}
	}
	pingCtx, stopPings := context.WithCancel(ctx)
	var pingWG sync.WaitGroup
	if r.cfg.PingInterval > 0 && r.cfg.Sockets > 0 {
		pingWG.Go(func() { r.pinger(pingCtx) })
	}
	start := time.Now()
	end := start.Add(r.cfg.Duration)
	pc := pacer{rate: r.cfg.JoinRate}
	pc.run(ctx, start, end, func(int, time.Time) {
		for {
			select {
			case p := <-r.idle:
				if p.rest {
					if p.join() {
						return
					}
					continue
				}
				r.wg.Go(func() {
					if !p.join() {
						r.stats.inc(cJoinsStarved)
					}
				})
				return
			default:
				r.stats.inc(cJoinsStarved)
				return
			}
		}
	})
	r.runEnd = time.Now()
	r.runSeconds = r.runEnd.Sub(start).Seconds()
	r.joinsOpen.Store(false)
	stopPings()
	pingWG.Wait()
}

// pinger sends every connected socket an application ping once per
// PingInterval, spread evenly over the interval.
func (r *runner) pinger(ctx context.Context) {
	const step = 20 * time.Millisecond
	n := r.cfg.Sockets
	perStep := max(1, int(float64(n)*float64(step)/float64(r.cfg.PingInterval)))
	t := time.NewTicker(step)
	defer t.Stop()
	next := r.rand().IntN(n)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for range perStep {
			p := r.players[next]
			next = (next + 1) % n
			r.wg.Go(p.ping)
		}
	}
}

// drainPhase waits (at most Drain) for outstanding tickets to resolve.
func (r *runner) drainPhase(ctx context.Context) {
	r.setPhase(phaseDrain)
	deadline := time.Now().Add(r.cfg.Drain)
	for r.stats.get(cWaiting) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		sleepCtx(ctx, 20*time.Millisecond)
	}
}

// verifyPhase compares what clients were told with GET /v1/tickets/{id}:
// every unresolved ticket (up to 10×Verify) and a sample of Verify resolved
// ones. The answers go to the checker as outcomes of source "verify".
func (r *runner) verifyPhase(ctx context.Context) int {
	r.setPhase(phaseVerify)
	// A match formed more than a drain before now must have been pushed.
	r.check.SetCutoff(time.Now().Add(-r.cfg.Drain))
	unresolved := r.check.Unresolved()
	r.stats.add(cUnresolved, int64(len(unresolved)))
	if len(unresolved) > 10*r.cfg.Verify {
		unresolved = unresolved[:10*r.cfg.Verify]
	}
	resolved := r.check.Resolved()
	rng := r.rand()
	rng.Shuffle(len(resolved), func(i, j int) { resolved[i], resolved[j] = resolved[j], resolved[i] })
	if len(resolved) > r.cfg.Verify {
		resolved = resolved[:r.cfg.Verify]
	}
	todo := append(unresolved, resolved...)
	if len(todo) == 0 {
		return 0
	}
	byUser := make(map[string]*player, len(r.players))
	for _, p := range r.players {
		u, _ := p.identity()
		byUser[u] = p
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	work := make(chan Seat)
	var verified atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for s := range work {
				p := byUser[s.User]
				if p == nil {
					continue
				}
				_, token := p.identity()
				var v protocol.ClientTicketView
				sent := time.Now()
				if err := r.restCall(vctx, "GET", p.base, "/v1/tickets/"+s.Ticket, token, nil, &v); err != nil {
					r.restError(err)
					continue
				}
				r.check.Tell(s.Ticket, s.User, v.Ticket.Status, v.Ticket.MatchID, srcVerify, sent)
				if m := v.Match; m != nil {
					// The record's seats must be the ones the clients saw.
					r.check.Match(m.ID, seatsOf(m.Players), m.CreatedAt)
				}
				verified.Add(1)
			}
		})
	}
	for _, s := range todo {
		select {
		case work <- s:
		case <-vctx.Done():
		}
		if vctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return int(verified.Load())
}

// closePhase closes every socket with a normal closure, 256 at a time,
// within 15 seconds; whatever is left is dropped.
func (r *runner) closePhase() {
	r.setPhase(phaseClose)
	r.closing.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	for _, p := range r.players[:r.cfg.Sockets] {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			p.closeSocket(2 * time.Second)
		})
	}
	wg.Wait()
}

// waitPlayers waits for every player goroutine, at most limit.
func (r *runner) waitPlayers(limit time.Duration) {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

// report builds this process's report (without the invariant verdict,
// which the coordinator computes).
func (r *runner) report(start time.Time, verified int) *Report {
	c := r.stats.Counters()
	rep := &Report{
		Mode: r.cfg.Mode, Targets: r.cfg.targetsLine(), Workers: 1, Sockets: r.cfg.Sockets,
		Start: start, ConnectSeconds: r.connectSeconds, RunSeconds: r.runSeconds,
		Latency: r.stats.hists, Counters: c,
		Errors: r.stats.Labeled(lErrors), Closes: r.stats.Labeled(lCloses), DialErrors: r.stats.Labeled(lDialErrors),
		DialErrorSamples: r.stats.Samples(),
		Verified:         verified,
	}
	rep.Rates = append(rep.Rates, rate("connects", r.cfg.ConnectRate, c["connects"]-c["reconnects"], r.connectSeconds))
	switch r.cfg.Mode {
	case modePlayers:
		rep.Rates = append(rep.Rates,
			rate("joins sent", r.cfg.JoinRate, c["joins_sent"], r.runSeconds),
			rate("joined", 0, c["joined"], r.runSeconds),
			rate("match.found", 0, c["match_found"], r.runSeconds))
	case modePush:
		rep.Rates = append(rep.Rates,
			rate("pushes published", r.cfg.PushRate, c["pushes_sent"], r.runSeconds),
			rate("pushes received", 0, c["pushes_received"], r.runSeconds))
	}
	return rep
}
