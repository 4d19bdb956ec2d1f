package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// spawner starts processes from one goroutine locked to its OS thread, so
// that Pdeathsig (which fires when the thread that forked the child dies,
// not the process) kills the servers if the chaos run itself is killed -9,
// and not before. close ends the goroutine, and with it the thread.
type spawner struct {
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		for r := range s.reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return s
}

// start starts cmd in a process group of its own, killed with SIGKILL if
// the spawner's thread dies.
func (s *spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

func (s *spawner) close() { close(s.reqs) }
