//go:build !linux && !windows

package executor

import "syscall"

// procAttr puts the tool in its own process group. Only Linux has a
// parent-death signal; elsewhere the reaper alone stops a tool whose astra
// died.
func procAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
