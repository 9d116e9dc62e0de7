//go:build !windows

package executor

import (
	"os/exec"
	"syscall"
)

// signalGroup sends sig to the tool's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) { _ = syscall.Kill(-cmd.Process.Pid, sig) }
