package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// snapshot is the live state of a fleet for the progress line.
type snapshot struct {
	Phase    string           `json:"phase"`
	Counters map[string]int64 `json:"counters"`
	Errors   int64            `json:"errors"`
	Closes   int64            `json:"closes"`
	// Found is the join→match.found histogram's bucket counts so far, for
	// the progress line's percentiles of its interval.
	Found []uint64 `json:"found,omitempty"`
}

var phaseOrder = []string{phaseStart, phaseConnect, phaseRun, phaseDrain, phaseVerify, phaseClose, phaseDone}

// earlierPhase returns whichever of a and b comes first.
func earlierPhase(a, b string) string {
	if slices.Index(phaseOrder, b) < slices.Index(phaseOrder, a) {
		return b
	}
	return a
}

// fleet is what the coordinator drives: this process's runner, or worker
// processes.
type fleet interface {
	start(ctx context.Context) error
	snapshot() snapshot
	// wait returns the merged report and the observations to check.
	wait() (*Report, *Checker, error)
}

// localFleet runs the players in this process.
type localFleet struct {
	r    *runner
	done chan *Report
}

func (f *localFleet) start(ctx context.Context) error {
	f.done = make(chan *Report, 1)
	go func() { f.done <- f.r.run(ctx) }()
	return nil
}

func (f *localFleet) snapshot() snapshot { return snapshotOf(f.r) }

func snapshotOf(r *runner) snapshot {
	return snapshot{Phase: r.Phase(), Counters: r.stats.Counters(),
		Errors: r.stats.labeledTotal(lErrors), Closes: r.stats.labeledTotal(lCloses),
		Found: r.stats.hist(hFound).Counts()}
}

func (f *localFleet) wait() (*Report, *Checker, error) {
	rep := <-f.done
	return rep, f.r.check, nil
}

// workerFleet re-executes this binary once per worker, each with its share
// of the sockets and rates, reads their progress from stdout and merges
// their final reports (written to files).
type workerFleet struct {
	cfg     Config
	count   int
	dir     string
	stderr  io.Writer
	mu      sync.Mutex
	snaps   []snapshot
	cmds    []*exec.Cmd
	waitErr []error
	wg      sync.WaitGroup
}

// split returns worker i's share (0-based) of n, spreading the remainder.
func split(n, workers, i int) int {
	s := n / workers
	if i < n%workers {
		s++
	}
	return s
}

// workerConfig is worker i's (0-based) configuration.
func (f *workerFleet) workerConfig(i int) Config {
	c := f.cfg
	w := float64(f.count)
	c.Sockets = split(f.cfg.Sockets, f.count, i)
	c.RestPlayers = split(f.cfg.RestPlayers, f.count, i)
	c.ConnectRate, c.JoinRate, c.PushRate = c.ConnectRate/w, c.JoinRate/w, c.PushRate/w
	c.Verify = max(1, split(f.cfg.Verify, f.count, i))
	c.ServerPIDs, c.MetricsURL = nil, nil
	c.JSONPath = filepath.Join(f.dir, fmt.Sprintf("worker-%d.json", i+1))
	c.WorkerIndex, c.WorkerCount, c.Workers = i+1, f.count, 1
	// Each worker starts at a different source address, so the first
	// sockets of every worker do not all share one.
	if n := len(c.SourceAddrs); n > 1 {
		rot := append(slices.Clone(c.SourceAddrs[i%n:]), c.SourceAddrs[:i%n]...)
		c.SourceAddrs = rot
	}
	if c.Seed != 0 {
		c.Seed += uint64(i)
	}
	return c
}

func (f *workerFleet) start(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	f.dir, err = os.MkdirTemp("", "loadgen-")
	if err != nil {
		return err
	}
	f.snaps = make([]snapshot, f.count)
	f.waitErr = make([]error, f.count)
	for i := range f.count {
		f.snaps[i] = snapshot{Phase: phaseStart, Counters: map[string]int64{}}
		wc := f.workerConfig(i)
		b, _ := json.Marshal(wc)
		path := filepath.Join(f.dir, fmt.Sprintf("worker-%d.config.json", i+1))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, self, "--worker-config", path)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		cmd.Stderr = &prefixWriter{w: f.stderr, prefix: fmt.Sprintf("[worker %d] ", i+1)}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start worker %d: %w", i+1, err)
		}
		f.cmds = append(f.cmds, cmd)
		f.wg.Go(func() {
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "progress ")
				if !ok {
					continue
				}
				var s snapshot
				if json.Unmarshal([]byte(line), &s) == nil {
					f.mu.Lock()
					f.snaps[i] = s
					f.mu.Unlock()
				}
			}
			err := cmd.Wait()
			f.mu.Lock()
			f.waitErr[i] = err
			f.snaps[i].Phase = phaseDone
			f.mu.Unlock()
		})
	}
	return nil
}

func (f *workerFleet) snapshot() snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	sum := snapshot{Phase: phaseDone, Counters: map[string]int64{}}
	for _, s := range f.snaps {
		sum.Phase = earlierPhase(sum.Phase, s.Phase)
		for k, v := range s.Counters {
			sum.Counters[k] += v
		}
		sum.Errors += s.Errors
		sum.Closes += s.Closes
		sum.Found = addBuckets(sum.Found, s.Found)
	}
	return sum
}

func (f *workerFleet) wait() (*Report, *Checker, error) {
	f.wg.Wait()
	defer os.RemoveAll(f.dir)
	merged := &Report{Mode: f.cfg.Mode, Targets: f.cfg.targetsLine()}
	check := NewChecker()
	var errs []error
	for i := range f.count {
		if err := f.waitErr[i]; err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", i+1, err))
		}
		rep, err := readReport(filepath.Join(f.dir, fmt.Sprintf("worker-%d.json", i+1)))
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %d report: %w", i+1, err))
			continue
		}
		merged.Merge(rep)
		check.Merge(rep.Observations)
	}
	merged.Targets = f.cfg.targetsLine()
	return merged, check, errors.Join(errs...)
}

// runWorker is the body of a worker process: run the share, print progress
// lines on stdout, write the report with the observations.
func runWorker(ctx context.Context, cfg Config, stdout io.Writer) error {
	r, err := newRunner(cfg)
	if err != nil {
		return err
	}
	done := make(chan *Report, 1)
	go func() { done <- r.run(ctx) }()
	enc := json.NewEncoder(stdout)
	emit := func() {
		fmt.Fprint(stdout, "progress ")
		_ = enc.Encode(snapshotOf(r))
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var rep *Report
	for rep == nil {
		select {
		case rep = <-done:
		case <-t.C:
			emit()
		}
	}
	rep.Observations = r.check.Snapshot()
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.JSONPath, b, 0o600); err != nil {
		return err
	}
	emit()
	return nil
}

// prefixWriter prefixes every line written through it.
type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	midLine bool // the current line's prefix is written
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.midLine {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
			p.midLine = true
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			_, err := p.w.Write(b)
			return n, err
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.midLine = false
		b = b[i+1:]
	}
	return n, nil
}
