//go:build !windows

package executor

import (
	"os/exec"
	"syscall"
)

// setGroup starts the tool in its own process group, so a stop reaches
// everything it started, and (on Linux) with a parent-death signal.
func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = procAttr() }

// signalGroup sends sig to the tool's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) { _ = syscall.Kill(-cmd.Process.Pid, sig) }
