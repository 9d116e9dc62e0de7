package executor

import (
	"os/exec"
	"syscall"
)

// Windows has no process groups to signal: a stop kills the tool itself,
// and processes it started may outlive it.
func setGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ syscall.Signal) { _ = cmd.Process.Kill() }

// watchGroup has no reaper to hand the tool to on Windows.
func watchGroup(int) (release func()) { return func() {} }
