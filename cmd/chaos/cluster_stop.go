package main

import (
	"fmt"
	"syscall"
	"time"
)

// signalGroup sends sig to p's process group, if p runs; it returns the
// channel closed when the incarnation has exited.
func (c *cluster) signalGroup(p *proc, sig syscall.Signal) (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil, false
	}
	p.expected = true
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	return p.done, true
}

// kill9 kills p's process group with SIGKILL and waits for it to be gone.
func (c *cluster) kill9(p *proc) error {
	done, ok := c.signalGroup(p, syscall.SIGKILL)
	if !ok {
		return fmt.Errorf("%s is not running", p.name)
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s survived SIGKILL for 10s", p.name)
	}
}

// stopAll asks every process to stop (SIGTERM: the graceful drain), kills
// the groups of those still there after grace, and records those that did
// not exit cleanly.
func (c *cluster) stopAll(grace time.Duration) {
	type waiting struct {
		p    *proc
		done <-chan struct{}
	}
	var ws []waiting
	for _, p := range c.procs {
		if done, ok := c.signalGroup(p, syscall.SIGTERM); ok {
			ws = append(ws, waiting{p, done})
		}
	}
	timeout := time.After(grace)
	for _, w := range ws {
		select {
		case <-w.done:
			w.p.mu.Lock()
			err, inc := w.p.lastErr, w.p.inc
			w.p.mu.Unlock()
			if err != nil {
				c.mu.Lock()
				c.unclean = append(c.unclean, exitRec{Proc: w.p.name, Incarnation: inc, At: time.Now(), Err: "on SIGTERM: " + err.Error()})
				c.mu.Unlock()
			}
		case <-timeout:
			c.mu.Lock()
			c.unclean = append(c.unclean, exitRec{Proc: w.p.name, At: time.Now(), Err: fmt.Sprintf("still running %s after SIGTERM", grace)})
			c.mu.Unlock()
			c.killAll()
		}
	}
	c.killAll()
}

// killAll kills every process group still running and waits for them: the
// last resort on every way out of a run.
func (c *cluster) killAll() {
	for _, p := range c.procs {
		if done, ok := c.signalGroup(p, syscall.SIGKILL); ok {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.logf("%s survived SIGKILL for 10s", p.name)
			}
		}
	}
}

// close kills everything, refuses any later start and ends the spawner.
func (c *cluster) close() {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	c.killAll()
	if !already {
		c.spawn.close()
	}
}
