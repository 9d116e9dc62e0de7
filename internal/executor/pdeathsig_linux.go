package executor

import "syscall"

// procAttr puts the tool in its own process group. Without a reaper
// (deathSignal) the kernel kills the tool (SIGKILL) when astra dies,
// SIGKILL included. The signal is tied to the OS thread that started the
// tool, not to the process: runExec keeps its goroutine locked to that
// thread until the tool has exited, so no other goroutine can end the
// thread (a LockOSThread without Unlock does) and kill the tool early.
func procAttr(deathSignal bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if deathSignal {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}
