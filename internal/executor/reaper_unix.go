//go:build !windows

package executor

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// The reaper makes sure nothing a tool started outlives astra. It is astra
// itself, started once (the first time an exec tool runs) with reaperEnv
// set, in a process group of its own, reading from a pipe the process
// groups of the tools that are running ("+<pgid>" as one starts, "-<pgid>"
// once it is gone). Only astra holds the pipe's write end (close-on-exec,
// so tools do not inherit it): when astra exits in any way, SIGKILL and a
// crash included, the reaper reads end of file, kills every group still
// listed, and exits. The parent-death signal (Linux) stops the tool itself
// at once; the reaper stops what the tool started.
const reaperEnv = "ASTRA_INTERNAL_REAPER"

func init() {
	if os.Getenv(reaperEnv) == "1" {
		reap(os.Stdin)
		os.Exit(0)
	}
}

// reap is the reaper's whole life: follow the list until end of file,
// then kill what is left. Signals that would stop it with astra (a ^C to
// the terminal's group, a SIGTERM to the job) are ignored: end of file is
// its only way out.
func reap(r io.Reader) {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	groups := map[int]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		groups[pgid] = line[0] == '+'
	}
	for pgid, live := range groups {
		if live {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
}

var reaper struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File // nil when the reaper could not be started
}

// watchGroup hands a running tool's process group to the reaper and
// returns the call that takes it back. Without a reaper (it could not be
// started) a tool still dies with astra through its parent-death signal,
// but what it started may not.
func watchGroup(pgid int) (release func()) {
	reaper.once.Do(startReaper)
	send := func(op byte) {
		reaper.mu.Lock()
		defer reaper.mu.Unlock()
		if reaper.w != nil {
			// One short write: atomic on a pipe. A reaper that died makes
			// it fail (EPIPE), which changes nothing for the tool.
			_, _ = fmt.Fprintf(reaper.w, "%c%d\n", op, pgid)
		}
	}
	send('+')
	return func() { send('-') }
}

func startReaper() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = []string{reaperEnv + "=1"}
	cmd.Stdin = r // stdout and stderr: /dev/null, so it holds no one's pipes open
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return
	}
	go func() { _ = cmd.Wait() }() // it ends only after astra, or if someone kills it
	reaper.w = w
}
