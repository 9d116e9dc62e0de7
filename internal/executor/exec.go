package executor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// baseEnv is what every exec tool gets from astra's environment; anything
// else must be named in the tool's env list. The parent environment holds
// CI secrets that a tool has no business seeing.
var baseEnv = []string{"PATH", "HOME", "LANG", "TMPDIR", "TZ"}

func (e *Executor) runExec(ctx context.Context, req Request) Result {
	argv := req.Tool.Command
	in := payloadJSON(req.Payload)
	if req.DryRun && !req.Tool.DryRunSupported {
		return Result{Status: StatusWouldRun, WouldRun: fmt.Sprintf("%s (payload %d bytes on stdin)", shellQuote(argv), len(in))}
	}
	g := newGuard(req, len(in)+len(req.PreviousOutput)+len(req.Memory))
	if limit := g.preflight(); limit != "" {
		u, _ := g.snapshot(0)
		return Result{Status: StatusFailed, Reason: ReasonBudgetExceeded, Exceeded: limit, Usage: u, Error: exceededError(limit, req.Budget, u)}
	}

	cmd := e.command(req, in)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{Status: StatusFailed, Reason: ReasonError, Error: err.Error()}
	}
	out := &ring{n: e.opts.OutputTail}
	errw := &countingWriter{w: out, g: g}
	cmd.Stderr = errw

	// The parent-death signal follows the thread that starts the tool: this
	// goroutine keeps that thread to itself until the tool has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{Status: StatusFailed, Reason: ReasonError, Error: startError(argv[0], err)}
	}
	release := watchGroup(cmd.Process.Pid)
	defer func() {
		// However this returns, a panic included, the group goes: the tool
		// may have left children behind even when it exited itself.
		signalGroup(cmd, syscall.SIGKILL)
		release()
	}()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		readStdout(stdout, out, g)
	}()

	var stopWhy string
	var timers []*time.Timer
	if d := req.Budget.MaxWallClock.D(); d > 0 {
		timers = append(timers, time.AfterFunc(d*8/10, func() { g.wallClock(0.8) }), time.AfterFunc(d, func() { g.wallClock(1) }))
	}
	waited := make(chan error, 1)
	go func() {
		wg.Wait() // all of stdout read (or the pipe closed) before Wait closes it
		waited <- cmd.Wait()
	}()
	var werr error
	select {
	case werr = <-waited:
	case <-g.stop:
		stopWhy = "budget"
		killGroup(cmd, e.opts.KillGrace, waited)
		werr = <-waited
	case <-ctx.Done():
		stopWhy = "canceled"
		killGroup(cmd, e.opts.KillGrace, waited)
		werr = <-waited
	}
	for _, t := range timers {
		t.Stop()
	}

	u, exceeded := g.snapshot(time.Since(start))
	res := Result{Status: StatusOK, Output: out.String(), Usage: u}
	if req.DryRun {
		res.Status = StatusDryRun
	}
	switch {
	case exceeded != "":
		res.Status, res.Reason, res.Exceeded, res.Error = StatusFailed, ReasonBudgetExceeded, exceeded, exceededError(exceeded, req.Budget, u)
	case stopWhy == "canceled":
		res.Status, res.Reason, res.Error = StatusFailed, ReasonCanceled, "astra was interrupted; the tool's process group was killed"
	case werr != nil:
		exitFailure(&res, argv[0], werr)
	}
	return res
}

// command is the tool's process, not started: argv run from the
// repository root (a relative path with a slash is the repository's file)
// with its own environment and process group, the payload on stdin.
func (e *Executor) command(req Request, in []byte) *exec.Cmd {
	argv := req.Tool.Command
	name := argv[0]
	if strings.Contains(name, "/") && !filepath.IsAbs(name) {
		name = filepath.Join(req.Dir, name)
	}
	cmd := exec.Command(name, argv[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = toolEnv(req)
	cmd.Stdin = bytes.NewReader(in)
	setGroup(cmd)
	// Orphaned grandchildren may hold the pipes open after the group is
	// killed; Wait gives up on them after this.
	cmd.WaitDelay = e.opts.KillGrace
	return cmd
}

// startError says why a tool did not start, with what to do about it.
func startError(name string, err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("command %s not found: commands run from the repository root", name)
	case errors.Is(err, os.ErrPermission):
		return fmt.Sprintf("command %s is not executable: chmod +x it", name)
	}
	return err.Error()
}

// exitFailure fills in res for a tool that ended with werr: its exit
// code when it exited, else why waiting for it failed.
func exitFailure(res *Result, name string, werr error) {
	res.Status, res.Reason = StatusFailed, ReasonExit
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		res.ExitCode = ee.ExitCode()
		res.Error = fmt.Sprintf("%s: %v", name, werr)
	} else {
		res.Reason, res.Error = ReasonError, werr.Error()
	}
}

// killGroup stops the tool and everything it started: SIGTERM to the
// process group, SIGKILL after the grace period.
func killGroup(cmd *exec.Cmd, grace time.Duration, waited chan error) {
	signalGroup(cmd, syscall.SIGTERM)
	select {
	case err := <-waited:
		waited <- err
	case <-time.After(grace):
		signalGroup(cmd, syscall.SIGKILL)
	}
}

// toolEnv is the environment of an exec tool.
func toolEnv(req Request) []string {
	var env []string
	seen := map[string]bool{}
	add := func(k, v string) {
		if !seen[k] {
			seen[k] = true
			env = append(env, k+"="+v)
		}
	}
	dry := "0"
	if req.DryRun {
		dry = "1"
	}
	add("ASTRA_DRY_RUN", dry)
	add("ASTRA_RUN_ID", req.RunID)
	add("ASTRA_SCHEDULE_ID", req.ScheduleID)
	add("ASTRA_PAYLOAD", string(payloadJSON(req.Payload)))
	if req.TraceParent != "" {
		add("TRACEPARENT", req.TraceParent)
	}
	if req.PreviousOutput != "" {
		add("ASTRA_PREVIOUS_OUTPUT", "<previous_task_output>\n"+strings.TrimRight(req.PreviousOutput, "\n")+"\n</previous_task_output>")
	}
	if req.Memory != "" {
		add("ASTRA_MEMORY", req.Memory)
	}
	if req.Event != "" {
		add("ASTRA_EVENT", req.Event)
	}
	if rb := req.Rollback; rb != nil {
		add("ASTRA_ROLLBACK_OF", rb.RunID)
		add("ASTRA_ORIGINAL_OUTPUT", rb.Output)
	}
	for _, k := range append(append([]string(nil), baseEnv...), req.Tool.Env...) {
		if v := req.Getenv(k); v != "" {
			add(k, v)
		}
	}
	return env
}

// readStdout copies stdout to the output ring, feeding usage lines to the
// guard as they arrive instead of the ring.
func readStdout(r io.Reader, out *ring, g *guard) {
	br := bufio.NewReaderSize(r, 64<<10)
	atLineStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atLineStart && bytes.HasPrefix(chunk, []byte(usagePrefix)) && err == nil {
				if u, ok := parseUsage(bytes.TrimSpace(chunk[len(usagePrefix):])); ok {
					g.add(u)
					continue
				}
			}
			out.Write(chunk)
			g.output(len(chunk))
			atLineStart = chunk[len(chunk)-1] == '\n'
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// countingWriter feeds stderr to the ring and the token estimate.
type countingWriter struct {
	w *ring
	g *guard
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.w.Write(p)
	c.g.output(len(p))
	return len(p), nil
}
