package executor

import (
	"os/exec"
	"syscall"
)

// Windows has no process groups to signal: a stop kills the tool itself,
// and processes it started may outlive it.
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) { _ = cmd.Process.Kill() }

// startTool starts the tool; there is no reaper to hand it to on Windows.
func startTool(cmd *exec.Cmd, _ string) (release func(), err error) {
	return func() {}, cmd.Start()
}

// sweep has no orphans to look for on Windows.
func sweep() {}
