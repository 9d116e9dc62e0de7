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
	"strings"
	"sync"
	"syscall"
)

// The reaper makes sure nothing a tool started outlives astra. It is astra
// itself, started once (the first time an exec tool runs) with reaperEnv
// set, in a process group of its own, reading from a pipe the tools that
// are running ("+<pid> <dir>" as one starts: its process, which leads its
// own group, and its private directory; "-<pid>" once it is gone). Only
// astra holds the pipe's write end (close-on-exec, so tools do not inherit
// it): when astra exits in any way, SIGKILL and a crash included, the
// reaper reads end of file, stops every tool still listed with all its
// descendants (on Linux a tool is a child subreaper, so even daemons in
// sessions of their own are in its process tree while it lives), kills
// them, removes their directories, and exits. Tools have no parent-death
// signal while the reaper runs: a tool killed with astra would hand its
// orphans to init before the reaper could find them.
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
	live := map[int]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		num, dir, _ := strings.Cut(line[1:], " ")
		pid, err := strconv.Atoi(num)
		if err != nil || pid <= 1 {
			continue
		}
		if line[0] == '+' {
			live[pid] = dir
		} else {
			delete(live, pid)
		}
	}
	var roots []int
	for pid := range live {
		_ = syscall.Kill(-pid, syscall.SIGSTOP)
		roots = append(roots, pid)
	}
	for _, pid := range descendants(roots) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for pid, dir := range live {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

var reaper struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File // nil when the reaper could not be started
}

// kids are astra's children that are its own (the reaper, the tools it
// started), as opposed to orphans it adopted as the child subreaper.
// Starting a tool and sweeping orphans hold mu, so a tool that is
// starting is never taken for an orphan.
var kids struct {
	mu   sync.Mutex
	pids map[int]bool
}

// startTool starts cmd in its own process group, hands it to the reaper
// with dir (the tool's own directory), and returns the call that takes it
// back.
func startTool(cmd *exec.Cmd, dir string) (release func(), err error) {
	reaper.once.Do(startReaper)
	cmd.SysProcAttr = procAttr(reaper.w == nil)
	kids.mu.Lock()
	err = cmd.Start()
	if err == nil {
		kids.pids[cmd.Process.Pid] = true
	}
	kids.mu.Unlock()
	if err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	send := func(line string) {
		reaper.mu.Lock()
		defer reaper.mu.Unlock()
		if reaper.w != nil {
			// One short write: atomic on a pipe. A reaper that died makes
			// it fail (EPIPE), which changes nothing for the tool.
			_, _ = io.WriteString(reaper.w, line)
		}
	}
	send(fmt.Sprintf("+%d %s\n", pid, strings.ReplaceAll(dir, "\n", "")))
	return func() {
		kids.mu.Lock()
		delete(kids.pids, pid)
		kids.mu.Unlock()
		send(fmt.Sprintf("-%d\n", pid))
	}, nil
}

func startReaper() {
	kids.pids = map[int]bool{}
	becomeSubreaper()
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
	kids.pids[cmd.Process.Pid] = true
	go func() { _ = cmd.Wait() }() // it ends only after astra, or if someone kills it
	reaper.w = w
}
