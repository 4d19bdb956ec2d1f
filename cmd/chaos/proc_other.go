//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// spawner starts processes in process groups of their own. Without Linux's
// Pdeathsig, servers outlive a chaos run that is itself killed -9; every
// other exit path kills their groups.
type spawner struct{}

func newSpawner() *spawner { return &spawner{} }

func (s *spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

func (s *spawner) close() {}
