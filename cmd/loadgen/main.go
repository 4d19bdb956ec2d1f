package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes.
const (
	exitOK        = 0
	exitError     = 1 // bad flags, a failed worker, an unwritable report
	exitViolation = 2 // an invariant was violated
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, workerConfig, err := parseConfig(args, stderr)
	if errors.Is(err, errUsage) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}
	if _, err := raiseFileLimit(); err != nil {
		fmt.Fprintf(stderr, "loadgen: raise the open-file limit: %v\n", err)
	}
	if workerConfig != "" {
		b, err := os.ReadFile(workerConfig)
		if err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(ctx, cfg.hardLimit())
			defer cancel()
			err = runWorker(ctx, cfg, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loadgen worker: %v\n", err)
			return exitError
		}
		return exitOK
	}
	return coordinate(ctx, cfg, stdout, stderr)
}

// hardLimit bounds a whole run: the connect phase at its rate, the measured
// phase, the drain, verification, closing, and a margin.
func (c *Config) hardLimit() time.Duration {
	connect := time.Duration(float64(c.Sockets)/c.ConnectRate*float64(time.Second)) + c.ConnectTimeout + 2*time.Second
	return connect + c.Duration + c.Drain + 30*time.Second + 15*time.Second + 30*time.Second
}

// coordinate runs the fleet (here or in workers), reads server memory
// around the connect phase in idle mode, prints progress and the final
// table, checks the invariants and writes --json.
func coordinate(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if cfg.RunID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		cfg.RunID = hex.EncodeToString(b)
	}
	if cfg.Mode == modeAdmission {
		return runAdmission(ctx, cfg, stdout, stderr)
	}
	if cfg.Mode == modeProviders {
		return runProviders(ctx, cfg, stdout, stderr)
	}
	if cfg.Mode == modeRankings {
		return runRankings(ctx, cfg, stdout, stderr)
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = (cfg.Sockets + cfg.PerProcess - 1) / cfg.PerProcess
	}
	if cfg.Mode == modeIdle && len(cfg.ServerPIDs) > 0 && cfg.Duration < cfg.Settle+time.Second {
		fmt.Fprintf(stderr, "loadgen: idle mode reads memory %s after connecting: --duration must be at least --settle + 1s\n", cfg.Settle)
		return exitError
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.hardLimit()+15*time.Second)
	defer cancel()

	var f fleet
	if workers <= 1 {
		cfg.Workers = 1
		r, err := newRunner(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "loadgen: %v\n", err)
			return exitError
		}
		f = &localFleet{r: r}
	} else {
		f = &workerFleet{cfg: cfg, count: workers, stderr: stderr}
	}
	fmt.Fprintf(stdout, "loadgen %s: run %s, %d sockets + %d REST players over %d process(es), %d source address(es), targets %v\n",
		cfg.Mode, cfg.RunID, cfg.Sockets, cfg.RestPlayers, max(workers, 1), len(cfg.SourceAddrs), cfg.URLs)

	var before memSample
	measureMem := cfg.Mode == modeIdle && (len(cfg.ServerPIDs) > 0 || len(cfg.MetricsURL) > 0)
	if measureMem {
		var err error
		if before, err = sampleMemory(ctx, cfg); err != nil {
			fmt.Fprintf(stderr, "loadgen: %v\n", err)
			return exitError
		}
	}
	if err := f.start(ctx); err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return exitError
	}

	var mem *MemoryReport
	prog := newProgress(stdout, cfg)
	memDone := !measureMem
	var settled time.Time
	tick := time.NewTicker(200 * time.Millisecond)
	for {
		s := f.snapshot()
		prog.maybePrint(s, s.Phase == phaseDone)
		if !memDone && s.Phase != phaseStart && s.Phase != phaseConnect {
			if settled.IsZero() {
				settled = time.Now().Add(cfg.Settle)
			}
			if time.Now().After(settled) {
				after, err := sampleMemory(ctx, cfg)
				if err != nil {
					fmt.Fprintf(stderr, "loadgen: %v\n", err)
				} else {
					mem = memoryReport(cfg, before, after, s.Counters["sockets_open"])
				}
				memDone = true
			}
		}
		if s.Phase == phaseDone {
			break
		}
		<-tick.C
	}
	tick.Stop()
	rep, check, err := f.wait()
	code := exitOK
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		code = exitError
	}
	rep.Memory = mem
	rep.Workers = max(workers, 1)
	rep.Invariants = verdict(check, rep.Verified)
	// Workers each count the matches they saw; the checker knows the union.
	rep.Counters["matches"] = int64(rep.Invariants.Matches)
	rep.PrintTable(stdout)
	if cfg.JSONPath != "" {
		if err := rep.WriteJSON(cfg.JSONPath); err != nil {
			fmt.Fprintf(stderr, "loadgen: write %s: %v\n", cfg.JSONPath, err)
			code = exitError
		}
	}
	if rep.Invariants.Violations > 0 {
		return exitViolation
	}
	return code
}

// verdict checks the invariants over the merged observations.
func verdict(c *Checker, verified int) Invariants {
	v := c.Check()
	tickets, matches := c.Counts()
	inv := Invariants{Tickets: tickets, Matches: matches, Verified: verified, Violations: len(v)}
	if len(v) > maxDetails {
		v = v[:maxDetails]
	}
	inv.Details = v
	return inv
}

// progress prints a k6-style line every --progress.
type progress struct {
	w         io.Writer
	cfg       Config
	start     time.Time
	last      time.Time
	prev      map[string]int64
	prevFound []uint64
}

func newProgress(w io.Writer, cfg Config) *progress {
	now := time.Now()
	return &progress{w: w, cfg: cfg, start: now, last: now, prev: map[string]int64{}}
}

func (p *progress) maybePrint(s snapshot, force bool) {
	now := time.Now()
	dt := now.Sub(p.last).Seconds()
	if !force && dt < p.cfg.Progress.Seconds() {
		return
	}
	if dt <= 0 {
		dt = 1e-9
	}
	per := func(k string) float64 { return float64(s.Counters[k]-p.prev[k]) / dt }
	line := fmt.Sprintf("[%6.1fs] %-7s sockets %d/%d  conn/s %.0f", now.Sub(p.start).Seconds(), s.Phase,
		s.Counters["sockets_open"], p.cfg.Sockets, per("connects"))
	switch p.cfg.Mode {
	case modePlayers:
		line += fmt.Sprintf("  joins/s %.0f  found/s %.0f  matches/s %.0f  waiting %d  found p50/p99 %s",
			per("joins_sent"), per("match_found"), per("matches"), s.Counters["waiting"],
			intervalPercentiles(s.Found, p.prevFound))
	case modePush:
		line += fmt.Sprintf("  pushes/s %.0f  received/s %.0f", per("pushes_sent"), per("pushes_received"))
	}
	line += fmt.Sprintf("  errors %d  closes %d  reconnects %d  connect-failures %d",
		s.Errors, s.Closes, s.Counters["reconnects"], s.Counters["connect_failed"])
	fmt.Fprintln(p.w, line)
	p.last, p.prev, p.prevFound = now, s.Counters, s.Found
}

// intervalPercentiles formats the p50 and p99 (ms) of the observations in
// cur that are not in prev, bucket counts of one histogram: "-" when none.
// A stall shows here in the interval it happens, where the run's totals
// would average it away.
func intervalPercentiles(cur, prev []uint64) string {
	diff := make([]uint64, len(cur))
	var n uint64
	for i, c := range cur {
		if i < len(prev) {
			c -= min(c, prev[i])
		}
		diff[i], n = c, n+c
	}
	if n == 0 {
		return "-"
	}
	p50, _ := bucketQuantile(diff, n, 0.50)
	p99, _ := bucketQuantile(diff, n, 0.99)
	return fmt.Sprintf("%.1f/%.1f ms", p50/1000, p99/1000)
}
