package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/matchgate/matchgate/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process. It returns the exit code: 0 when every
// invariant held, 1 on any violation, 2 when the run could not be carried
// out.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	rep, err := chaosRun(ctx, o, stderr)
	if rep != nil {
		rep.print(stdout)
		if o.JSON != "" {
			if jerr := rep.writeJSON(o.JSON); jerr != nil {
				fmt.Fprintln(stderr, "chaos: --json:", jerr)
				return 2
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// buildServer builds ./cmd/matchgate, so the run tests the current code.
func buildServer(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "matchgate")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/matchgate/matchgate/cmd/matchgate")
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/matchgate (run inside the repository, or pass --bin): %w\n%s", err, out)
	}
	return bin, nil
}

// chaosRun carries out a run: set up, load with faults, settle, check. The
// report is nil only when the run failed before the load.
func chaosRun(parent context.Context, o options, logw io.Writer) (rep *report, err error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	logf := func(format string, args ...any) {
		if !o.Quiet {
			fmt.Fprintf(logw, "chaos %7s  %s\n", time.Since(began).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
		}
	}
	logf("seed %d", o.Seed)
	loadAtStart := loadAvg()

	keep := o.KeepLogs
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "matchgate-chaos-*"); err != nil {
			return nil, err
		}
		defer func() {
			if !keep {
				os.RemoveAll(dir)
			}
		}()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	bin := o.Bin
	if bin == "" {
		logf("building ./cmd/matchgate (race %v)", o.Race)
		if bin, err = buildServer(ctx, dir, o.Race); err != nil {
			return nil, err
		}
	}
	d, err := openDeps(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := d.close(ctx, keep); cerr != nil {
			logf("cleanup: %v", cerr)
		}
	}()
	queues := runQueues(o.Deadline)
	qpath := filepath.Join(dir, "queues.yaml")
	var adm admissionSpec
	if o.Waiters > 0 {
		adm = admissionSpec{Rate: o.AdmitRate, TokenTTL: o.TokenTTL, AbandonAfter: o.AbandonAfter}
	}
	if err := writeQueueFile(qpath, queues, adm, o.Deadline, o.Heartbeat); err != nil {
		return nil, err
	}
	// The fake fleet manager and the PostgreSQL proxy outlive the cluster:
	// deferred before it, they close after it.
	fl, err := startFleet(o.AllocHang)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	serverPG := d.pgURL
	var proxy *pgProxy
	if o.PGFaultFor > 0 {
		upstream, err := pgUpstream(d.pgURL)
		if err != nil {
			return nil, err
		}
		if proxy, err = startPGProxy(upstream, o.Seed); err != nil {
			return nil, err
		}
		defer proxy.close()
		if serverPG, err = proxy.proxiedURL(d.pgURL); err != nil {
			return nil, err
		}
	}
	secret, adminToken := randomHex(16), randomHex(24)
	common := []string{"--redis-url", o.RedisURL, "--postgres-url", serverPG, "--redis-prefix", d.prefix,
		"--secret", secret, "--guests", "true", "--config", qpath, "--log-format", "json", "--shutdown-timeout", "5s",
		"--admin-token", adminToken}
	c, err := newCluster(bin, dir, common, logf)
	if err != nil {
		return nil, err
	}
	defer c.close()
	skews := clockSkews(c.procs, o.ClockSkew, o.Seed)
	c.perProc = func(p *proc, inc int) []string {
		args := []string{"--allocator-url", fl.url(p.name, inc)}
		if p.role == roleMatcher {
			// The admitter's lease owner starts with the node: the
			// admitter kill finds its holder by it.
			args = append(args, "--node", p.name)
		}
		if o.ClockSkew > 0 {
			args = append(args, "--clock-skew", skews[p.name].String())
		}
		return args
	}
	logf("starting 3 matchers, 2 gateways, 1 relay (prefix %s, logs in %s)", d.prefix, dir)
	if err := c.startAll(ctx); err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}

	// Load and faults.
	s := &sim{o: o, queues: queues, gateways: c.gatewayAddrs()}
	players, err := newPlayers(s, o, []byte(secret))
	if err != nil {
		return nil, err
	}
	loadStart := time.Now()
	s.joinStop = loadStart.Add(o.Duration)
	playersCtx, stopPlayers := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	playersDone := make(chan struct{})
	defer func() { // on every way out: no player outlives the run
		stopPlayers()
		select {
		case <-playersDone:
		case <-time.After(30 * time.Second):
		}
	}()
	ramp := min(o.Duration/4, 15*time.Second)
	for i, p := range players {
		arrival := ramp * time.Duration(i) / time.Duration(len(players))
		pwg.Go(func() { p.run(playersCtx, arrival) })
	}
	go func() { pwg.Wait(); close(playersDone) }()
	logf("%d players arriving over %s; load for %s", len(players), ramp, o.Duration)

	// The admission queue's waiters and downstream, stopped after their
	// own settle.
	as := newAdmSim(o, c.gatewayAddrs(), adminToken, s.joinStop)
	waiters, err := newWaiters(as, o, []byte(secret))
	if err != nil {
		return nil, err
	}
	admCtx, stopAdm := context.WithCancel(ctx)
	var awg sync.WaitGroup
	defer func() { stopAdm(); awg.Wait() }()
	for i, w := range waiters {
		arrival := ramp * time.Duration(i) / time.Duration(len(waiters))
		awg.Go(func() { w.run(admCtx, arrival) })
	}
	for i := range downstreamPool {
		rng := rand.New(rand.NewPCG(o.Seed, 0xd05+uint64(i)))
		awg.Go(func() { as.downstream(admCtx, rng) })
	}
	if len(waiters) > 0 {
		logf("%d waiters entering %s (rate %d/s)", len(waiters), gateQueue, o.AdmitRate)
	}
	f := &faults{c: c, d: d, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0xfa017)), logf: logf,
		proxy: proxy, fleet: fl, sim: s, admin: adminToken}
	loadCtx, endLoad := context.WithDeadline(ctx, s.joinStop)
	defer endLoad()
	fdone := make(chan struct{})
	go func() {
		defer close(fdone)
		f.run(loadCtx, ctx, loadStart)
	}()
	defer func() { <-fdone; f.wait() }() // restarts end with ctx on the way out
	defer cancel()                       // runs first: ends the restarts' sleeps
	progress(loadCtx, d, s, logf)
	<-fdone
	f.wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}

	// Settle: everything up, every ticket resolved, every player back.
	var endFindings []violation
	if err := c.ensureAll(ctx); err != nil {
		endFindings = append(endFindings, violation{Kind: vUnhealthyAtEnd, Detail: err.Error()})
	}
	logf("load over; settling")
	if err := settle(ctx, d, s, o, logf); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	if len(waiters) > 0 {
		if err := settleAdmission(ctx, d, as, o, logf); err != nil {
			return nil, fmt.Errorf("settle admission: %w", err)
		}
	}
	stopAdm()
	awg.Wait()
	stopPlayers()
	select {
	case <-playersDone:
	case <-time.After(30 * time.Second):
		return nil, errors.New("players did not stop within 30s")
	}
	runEnd := time.Now()
	logf("stopping the cluster")
	c.stopAll(15 * time.Second)

	// Check.
	var admission *admStats
	tickets, matches, err := loadRecord(ctx, d.pg)
	if err != nil {
		return nil, err
	}
	recs := make([]*playerRec, len(players))
	for i, p := range players {
		recs[i] = p.rec
	}
	ch := newChecker(o, queues, tickets, matches, recs, runEnd)
	ch.redisView = func(t *dbTicket) string { return d.ticketView(ctx, t, matches) }
	f.mu.Lock()
	ch.retiredAt, ch.killedAt = f.retiredAt, f.killedAt
	f.mu.Unlock()
	if !ch.retiredAt.IsZero() {
		ch.retiredQueue = o.RetireQueue
	}
	ch.allocs, ch.st.Fleet = fl.snapshot()
	ch.run()
	if len(waiters) > 0 {
		places, err := loadAdmission(ctx, d.pg)
		if err != nil {
			return nil, err
		}
		recs := make([]*waiterRec, len(waiters))
		for i, w := range waiters {
			recs[i] = w.rec
		}
		ac := &admCheck{places: places, waiters: recs, ds: as.snapshot(), faultsAt: f.faultTimes(loadStart),
			skew: o.ClockSkew, abandonAfter: o.AbandonAfter, f: ch.f,
			view: func(user string) (bool, bool, string, error) { return admLineView(ctx, d.rdb, d.prefix, user) }}
		ac.run()
		ac.st.Waiters, ac.st.Entries = len(waiters), as.entries.Load()
		ac.st.ReadyPushes, ac.st.ReadyPolls = as.pushesReady.Load(), as.pollsReady.Load()
		f.mu.Lock()
		ac.st.Kills = f.admitterKills
		f.mu.Unlock()
		admission = &ac.st
	}
	for _, v := range endFindings {
		ch.f.add(v)
	}
	rep = &report{Seed: o.Seed, Admission: admission}
	rep.fillSettings(o, bin)
	rep.Host = fmt.Sprintf("%d CPUs, load average %s at the start, %s at the end", runtime.NumCPU(), loadAtStart, loadAvg())
	rep.fillRecord(tickets, matches)
	rep.fillPlayers(recs)
	rep.fillFaults(f)
	rep.fillSkews(o.ClockSkew, skews)
	rep.Checks = ch.st
	rep.Logs = scanLogs(c.logFiles())
	rep.fillServerFindings(c, ch.f)
	rep.Violations.Total, rep.Violations.ByKind, rep.Violations.Examples = ch.f.total(), ch.f.byKind, ch.f.examples
	rep.OK = rep.Violations.Total == 0
	if !rep.OK {
		keep = true // the evidence stays
	}
	if keep {
		rep.Dir, rep.Schema = dir, d.ownSchema
		if err := writeFrames(filepath.Join(dir, "frames.jsonl"), recs); err != nil {
			logf("write frames: %v", err)
		}
	}
	rep.Elapsed = dur(time.Since(began))
	return rep, nil
}

func newPlayers(s *sim, o options, secret []byte) ([]*player, error) {
	rng := rand.New(rand.NewPCG(o.Seed, 0x9a7e5))
	now := time.Now()
	ps := make([]*player, o.Players)
	for i := range ps {
		skill := skillMin + rng.Float64()*(skillMax-skillMin)
		user := fmt.Sprintf("chaos-%d", i)
		tok, err := gateway.MintToken(secret, user, &skill, 24*time.Hour, now)
		if err != nil {
			return nil, err
		}
		ps[i] = &player{sim: s, user: user, token: tok, gw: i % len(s.gateways),
			rng: rand.New(rand.NewPCG(o.Seed, uint64(i)+1)), rec: &playerRec{User: user, Skill: skill}}
	}
	return ps, nil
}

// progress logs a line every 10 s until ctx ends.
func progress(ctx context.Context, d *deps, s *sim, logf func(string, ...any)) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			waiting, _, err := waitingState(ctx, d.pg)
			if err != nil {
				continue
			}
			logf("%d players connected, %d tickets waiting", s.connected.Load(), waiting)
		}
	}
}

// clockSkews spreads ±skew evenly over the processes, in an order drawn
// from seed, so that every process runs with a clock of its own.
func clockSkews(ps []*proc, skew time.Duration, seed uint64) map[string]time.Duration {
	out := map[string]time.Duration{}
	if skew == 0 || len(ps) == 0 {
		return out
	}
	order := rand.New(rand.NewPCG(seed, 0xc10c)).Perm(len(ps))
	for i, j := range order {
		v := -skew
		if len(ps) > 1 {
			v += 2 * skew * time.Duration(i) / time.Duration(len(ps)-1)
		}
		out[ps[j].name] = v
	}
	return out
}
