package executor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes astra the child subreaper: orphans of the tools'
// processes (a daemon in a session of its own whose tool has exited) come
// to astra instead of init, so that sweep finds them.
func becomeSubreaper() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// sweep kills what tools left behind: astra's children it did not start
// (orphans it adopted) that a tool started. Those run with no_new_privs,
// which the launcher set and nothing can unset, and in process groups of
// their own; astra's other children (git) have neither. Whole trees go,
// stopped first so that nothing forks meanwhile, and are reaped.
func sweep() {
	kids.mu.Lock()
	defer kids.mu.Unlock()
	me := os.Getpid()
	self, ok := readProc(me)
	if !ok {
		return
	}
	adopted := func() []int {
		var out []int
		for _, pid := range childrenOf(me) {
			if kids.pids[pid] {
				continue
			}
			if p, ok := readProc(pid); ok && (p.nnp != self.nnp || p.pgid != self.pgid) {
				out = append(out, pid)
			}
		}
		return out
	}
	// Each round takes the orphans there are; killing them makes orphans
	// of their own children, which the next round takes (as zombies, once
	// dead, to be reaped).
	for range 64 {
		roots := adopted()
		if len(roots) == 0 {
			return
		}
		for _, pid := range roots {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		for _, pid := range append(descendants(roots), roots...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range roots {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

// proc is what /proc says of a process.
type proc struct {
	pgid int
	nnp  bool
}

func readProc(pid int) (proc, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp ...: comm may hold anything but ends at
	// the last parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 {
		return proc{}, false
	}
	var p proc
	p.pgid, _ = strconv.Atoi(string(f[2]))
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return proc{}, false
	}
	p.nnp = bytes.Contains(status, []byte("\nNoNewPrivs:\t1"))
	return p, true
}

// childrenOf lists the children of pid (of all its threads).
func childrenOf(pid int) []int {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if len(files) == 0 {
		return childrenByScan(pid)
	}
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(w)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// childrenByScan is childrenOf for kernels without the children files:
// every process's parent, read from /proc.
func childrenByScan(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		if fs := bytes.Fields(b[i+1:]); len(fs) > 1 && string(fs[1]) == strconv.Itoa(pid) {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// descendants lists every process beneath roots, stopping each as it is
// found (a stopped process cannot fork), until no new one appears.
func descendants(roots []int) []int {
	seen := map[int]bool{}
	var out []int
	for changed := true; changed; {
		changed = false
		queue := append([]int(nil), roots...)
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			for _, c := range childrenOf(pid) {
				if !seen[c] {
					seen[c], changed = true, true
					_ = syscall.Kill(c, syscall.SIGSTOP)
					out = append(out, c)
				}
				queue = append(queue, c)
			}
		}
	}
	return out
}
