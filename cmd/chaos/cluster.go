package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Roles of the cluster's processes.
const (
	roleMatcher = "matcher"
	roleGateway = "gateway"
	roleRelay   = "relay"
)

// proc is one server process slot; each (re)start is an incarnation with a
// log file of its own, <name>.<incarnation>.log.
type proc struct {
	name, role, addr string

	mu       sync.Mutex
	cmd      *exec.Cmd
	running  bool
	done     chan struct{} // closed when the current incarnation has exited
	inc      int
	expected bool // the current incarnation's end is ours (kill or stop)
	started  time.Time
	lastErr  error
}

func (p *proc) isRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// exitRec is an incarnation that ended on its own (a crash), or did not stop
// cleanly when asked to.
type exitRec struct {
	Proc        string    `json:"proc"`
	Incarnation int       `json:"incarnation"`
	At          time.Time `json:"at"`
	Err         string    `json:"err"`
	Log         string    `json:"log"`
}

// cluster runs the server processes of a run.
type cluster struct {
	bin    string
	dir    string
	common []string // flags every process gets
	// perProc, when set, adds flags of one process's incarnation.
	perProc func(p *proc, inc int) []string
	procs   []*proc
	spawn   *spawner
	logf    func(format string, args ...any)

	mu      sync.Mutex
	closed  bool // no process starts any more
	crashes []exitRec
	unclean []exitRec
	logs    []string
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// newCluster lays out 3 matchers, 2 gateways and 1 relay, each with a
// loopback port of its own (only gateways listen today; the port stays the
// same across restarts so players reconnect to the same address).
func newCluster(bin, dir string, common []string, logf func(string, ...any)) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, common: common, spawn: newSpawner(), logf: logf}
	layout := []struct {
		role string
		n    int
	}{{roleRelay, 1}, {roleMatcher, 3}, {roleGateway, 2}}
	for _, l := range layout {
		for i := range l.n {
			addr, err := freeLoopbackAddr()
			if err != nil {
				c.spawn.close()
				return nil, fmt.Errorf("free port: %w", err)
			}
			c.procs = append(c.procs, &proc{name: fmt.Sprintf("%s-%d", l.role, i), role: l.role, addr: addr})
		}
	}
	return c, nil
}

func (c *cluster) byRole(role string) []*proc {
	var ps []*proc
	for _, p := range c.procs {
		if p.role == role {
			ps = append(ps, p)
		}
	}
	return ps
}

func (c *cluster) gatewayAddrs() []string {
	var as []string
	for _, p := range c.byRole(roleGateway) {
		as = append(as, p.addr)
	}
	return as
}

// serverEnv is the environment without MATCHGATE_* variables: every setting
// of a server comes from the flags the run passes.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MATCHGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts a new incarnation of p if it is not running.
func (c *cluster) start(p *proc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	p.inc++
	path := filepath.Join(c.dir, fmt.Sprintf("%s.%d.log", p.name, p.inc))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"serve"}, c.common...)
	args = append(args, "--roles", p.role, "--addr", p.addr, "--node", p.name)
	if c.perProc != nil {
		args = append(args, c.perProc(p, p.inc)...)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = serverEnv()
	c.mu.Lock() // held while spawning, so close() cannot slip in between
	if c.closed {
		c.mu.Unlock()
		f.Close()
		return fmt.Errorf("start %s: the cluster is closed", p.name)
	}
	if err := c.spawn.start(cmd); err != nil {
		c.mu.Unlock()
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	c.logs = append(c.logs, path)
	c.mu.Unlock()
	done := make(chan struct{})
	p.cmd, p.running, p.expected, p.done, p.started = cmd, true, false, done, time.Now()
	inc := p.inc
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		expected := p.expected
		p.running, p.lastErr = false, err
		p.mu.Unlock()
		if !expected {
			c.mu.Lock()
			c.crashes = append(c.crashes, exitRec{Proc: p.name, Incarnation: inc, At: time.Now(), Err: fmt.Sprint(err), Log: path})
			c.mu.Unlock()
			c.logf("UNEXPECTED EXIT of %s (#%d): %v; log %s", p.name, inc, err, path)
		}
		close(done)
	}()
	return nil
}

// logHas reports whether the current incarnation's log contains s.
func (c *cluster) logHas(p *proc, s string) bool {
	p.mu.Lock()
	path := filepath.Join(c.dir, fmt.Sprintf("%s.%d.log", p.name, p.inc))
	p.mu.Unlock()
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// waitReady waits until p serves: a gateway answers /readyz with 200; a
// matcher or relay has logged that it runs (or, should that message change,
// has stayed up for 5 s).
func (c *cluster) waitReady(ctx context.Context, p *proc, within time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		running, started := p.running, p.started
		p.mu.Unlock()
		if !running {
			return fmt.Errorf("%s exited while starting", p.name)
		}
		if p.role == roleGateway {
			resp, err := client.Get("http://" + p.addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		} else if c.logHas(p, `"msg":"matchgate running"`) || time.Since(started) > 5*time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready within %s", p.name, within)
}

// startAll starts every process at once (they migrate the fresh schema
// concurrently) and waits until all are ready.
func (c *cluster) startAll(ctx context.Context) error {
	for _, p := range c.procs {
		if err := c.start(p); err != nil {
			return err
		}
	}
	var errs []error
	for _, p := range c.procs {
		if err := c.waitReady(ctx, p, 60*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restart starts p again and waits until it serves.
func (c *cluster) restart(ctx context.Context, p *proc) error {
	if err := c.start(p); err != nil {
		return err
	}
	return c.waitReady(ctx, p, 60*time.Second)
}

// ensureAll restarts whatever is not running (after a crash) and checks
// that everything serves.
func (c *cluster) ensureAll(ctx context.Context) error {
	var errs []error
	for _, p := range c.procs {
		if !p.isRunning() {
			c.logf("restarting %s, found down", p.name)
		}
		if err := c.restart(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *cluster) logFiles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.logs...)
}
