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

	"github.com/astra-gitops/astra/internal/sandbox"
)

// baseEnv is what every exec tool gets from astra's environment; anything
// else must be named in the tool's env list. The parent environment holds
// CI secrets that a tool has no business seeing. HOME and TMPDIR are the
// tool's own (see private).
var baseEnv = []string{"PATH", "LANG", "TZ"}

// maxEnvInput is the largest input (payload, event, memory, earlier
// output) a tool also gets in its environment variable: larger ones are
// only in the file the *_FILE variable names (and, for the payload, on
// stdin). Linux refuses to start a program with one environment string
// over 128 KiB ("argument list too long"), and all of them share a few
// MiB with the arguments.
const maxEnvInput = 32 << 10

func (e *Executor) runExec(ctx context.Context, req Request) Result {
	argv := req.Tool.Command
	in := payloadJSON(req.Payload)
	if req.DryRun && !req.Tool.DryRunSupported {
		return Result{Status: StatusWouldRun, WouldRun: fmt.Sprintf("%s (payload %d bytes on stdin)", shellQuote(argv), len(in))}
	}
	g := newGuard(req, len(in)+len(req.PreviousOutput)+len(req.Memory))
	if g.preflight() != "" {
		var res Result
		g.settle(&res, 0)
		return res
	}
	failed := func(msg string) Result { return Result{Status: StatusFailed, Reason: ReasonError, Error: msg} }

	path, err := lookCommand(argv[0], req.Dir)
	if err != nil {
		return failed(err.Error())
	}
	priv, err := newPrivate(req.Dir)
	if err != nil {
		return failed(fmt.Sprintf("making the tool's HOME and TMPDIR: %v", err))
	}
	// However this returns, a panic included, the tool's own directories go.
	defer priv.remove()
	env, stdin, err := toolEnv(req, priv, in)
	if err != nil {
		return failed(fmt.Sprintf("handing the tool its inputs: %v", err))
	}
	defer stdin.Close()
	var policy *sandbox.Policy
	if req.Sandbox != nil {
		p := *req.Sandbox
		p.Writable = append([]string{priv.home, priv.tmp}, p.Writable...)
		policy = &p
	}
	cmd, started, err := sandbox.Command(path, argv, env, policy, priv.dir, req.Getenv)
	if err != nil {
		return failed(fmt.Sprintf("preparing the tool's sandbox: %v", err))
	}
	cmd.Dir = req.Dir
	cmd.Stdin = stdin
	// Output goes through pipes of our own, read by goroutines of our own:
	// Wait then returns when the tool exits, whatever its children do with
	// the pipes, and the budget's clock stops with it.
	outR, outW, err := os.Pipe()
	if err != nil {
		return failed(err.Error())
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return failed(err.Error())
	}
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW

	// The parent-death signal, where it is used, follows the thread that
	// starts the tool: this goroutine keeps that thread to itself until the
	// tool has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	release, err := startTool(cmd, priv.dir)
	started()
	outW.Close()
	errW.Close()
	if err != nil {
		return failed(err.Error())
	}
	defer func() {
		// However this returns, the tool's process group and whatever else
		// it started go: children it left behind, daemons in their own
		// sessions (orphans come to astra, the child subreaper).
		signalGroup(cmd, syscall.SIGKILL)
		sweep()
		release()
	}()

	out := &ring{n: e.opts.OutputTail}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		readStdout(outR, out, g)
	}()
	go func() {
		defer readers.Done()
		_, _ = io.Copy(&countingWriter{w: out, g: g}, errR)
	}()

	var stopWhy string
	var timers []*time.Timer
	if d := req.Budget.MaxWallClock.D(); d > 0 {
		timers = append(timers, time.AfterFunc(d*8/10, func() { g.wallClock(0.8) }), time.AfterFunc(d, func() { g.wallClock(1) }))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }() // the process, not its pipes
	var werr error
	select {
	case werr = <-waited:
	case <-g.stop:
		stopWhy = "budget"
		killGroup(cmd, e.opts.KillGrace, waited)
		werr = <-waited
	case <-ctx.Done():
		stopWhy = "canceled"
		g.halt()
		killGroup(cmd, e.opts.KillGrace, waited)
		werr = <-waited
	}
	elapsed := time.Since(start)
	for _, t := range timers {
		t.Stop()
	}
	// The tool has exited. What it started goes now, so the pipes close;
	// output still buffered is read for at most the kill grace.
	signalGroup(cmd, syscall.SIGKILL)
	sweep()
	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(e.opts.KillGrace):
		outR.Close()
		errR.Close()
		<-drained
	}

	res := Result{Status: StatusOK, Output: out.String()}
	if req.DryRun {
		res.Status = StatusDryRun
	}
	stopped := g.settle(&res, elapsed)
	switch {
	case stopped:
	case stopWhy == "canceled":
		res.Status, res.Reason, res.Error = StatusFailed, ReasonCanceled, "astra was interrupted; the tool's process group was killed"
	case werr != nil:
		res.Status, res.Reason = StatusFailed, ReasonExit
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			res.ExitCode = ee.ExitCode()
			res.Error = fmt.Sprintf("%s: %v", argv[0], werr)
			if res.ExitCode == 126 || res.ExitCode == 127 {
				if msg := launchError(out.String()); msg != "" {
					res.Reason, res.Error = ReasonError, msg
				}
			}
		} else {
			res.Reason, res.Error = ReasonError, werr.Error()
		}
	}
	return res
}

// lookCommand resolves a tool's command as exec.Command would (a path
// with a slash is the repository's), with the errors a person can act on.
func lookCommand(name, dir string) (string, error) {
	if strings.Contains(name, "/") && !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, os.ErrPermission):
		return "", fmt.Errorf("command %s is not executable: chmod +x it", name)
	default:
		return "", fmt.Errorf("command %s not found: commands run from the repository root", name)
	}
}

// launchError is the launcher's own complaint at the end of a tool's
// output, when it could not become the tool.
func launchError(out string) string {
	const prefix = "astra: could not start the tool: "
	if i := strings.LastIndex(out, prefix); i >= 0 {
		return strings.TrimSpace(out[i:])
	}
	return ""
}

// private is a tool's own directory: its HOME and TMPDIR, its inputs as
// files and the launch spec. Nothing survives the run: it is removed
// whatever happens, and by the reaper when astra dies.
type private struct{ dir, home, tmp, in string }

func newPrivate(repo string) (*private, error) {
	dir, err := os.MkdirTemp(privateBase(repo), "astra-tool-")
	if err != nil {
		return nil, err
	}
	p := &private{dir: dir, home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp"), in: filepath.Join(dir, "in")}
	for _, d := range []string{p.home, p.tmp, p.in} {
		if err := os.Mkdir(d, 0o700); err != nil {
			p.remove()
			return nil, err
		}
	}
	return p, nil
}

func (p *private) remove() { _ = os.RemoveAll(p.dir) }

// privateBase is where tools' own directories go: the system's temporary
// directory, unless it lies inside the repository, where tools running
// meanwhile would see them as files of the worktree.
func privateBase(repo string) string {
	base := os.TempDir()
	if rel, err := filepath.Rel(repo, base); repo != "" && err == nil && filepath.IsLocal(rel) {
		if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
			return "/tmp"
		}
	}
	return base
}

// toolEnv is the environment of an exec tool; stdin is its payload.
func toolEnv(req Request, priv *private, payload []byte) (env []string, stdin *os.File, err error) {
	seen := map[string]bool{}
	add := func(k, v string) {
		if !seen[k] {
			seen[k] = true
			env = append(env, k+"="+v)
		}
	}
	// input hands over one input: in a file always, in the variable too
	// when it is small enough.
	input := func(k string, v []byte) error {
		f := filepath.Join(priv.in, strings.ToLower(strings.TrimPrefix(k, "ASTRA_")))
		if err := os.WriteFile(f, v, 0o600); err != nil {
			return err
		}
		add(k+"_FILE", f)
		if len(v) <= maxEnvInput {
			add(k, string(v))
		}
		return nil
	}
	dry := "0"
	if req.DryRun {
		dry = "1"
	}
	add("ASTRA_DRY_RUN", dry)
	add("ASTRA_RUN_ID", req.RunID)
	add("ASTRA_SCHEDULE_ID", req.ScheduleID)
	if req.ToolAllow != "" {
		add("ASTRA_TOOL_ALLOW", req.ToolAllow)
	}
	if req.ToolDeny != "" {
		add("ASTRA_TOOL_DENY", req.ToolDeny)
	}
	if !req.Slot.IsZero() {
		add("ASTRA_SLOT", req.Slot.UTC().Format(time.RFC3339))
	}
	add("HOME", priv.home)
	add("TMPDIR", priv.tmp)
	if err := input("ASTRA_PAYLOAD", payload); err != nil {
		return nil, nil, err
	}
	if req.TraceParent != "" {
		add("TRACEPARENT", req.TraceParent)
	}
	inputs := []struct{ k, v string }{{"ASTRA_MEMORY", req.Memory}, {"ASTRA_EVENT", req.Event}}
	if req.PreviousOutput != "" {
		inputs = append(inputs, struct{ k, v string }{"ASTRA_PREVIOUS_OUTPUT", "<previous_task_output>\n" + strings.TrimRight(req.PreviousOutput, "\n") + "\n</previous_task_output>"})
	}
	if rb := req.Rollback; rb != nil {
		add("ASTRA_ROLLBACK_OF", rb.RunID)
		inputs = append(inputs, struct{ k, v string }{"ASTRA_ORIGINAL_OUTPUT", rb.Output})
	}
	for _, i := range inputs {
		if i.v != "" {
			if err := input(i.k, []byte(i.v)); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, k := range append(append([]string(nil), baseEnv...), req.Tool.Env...) {
		if v := req.Getenv(k); v != "" {
			add(k, v)
		}
	}
	// A file, not a pipe astra would have to feed: a tool (or a child it
	// leaves behind) that never reads stdin blocks nothing.
	stdin, err = os.Open(filepath.Join(priv.in, "payload"))
	return env, stdin, err
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

// readStdout copies stdout to the output ring, feeding usage lines to the
// guard as they arrive instead of the ring.
func readStdout(r io.Reader, out *ring, g *guard) {
	br := bufio.NewReaderSize(r, 64<<10)
	atLineStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atLineStart && bytes.HasPrefix(chunk, []byte(usagePrefix)) && err == nil {
				if l, ok := parseUsage(bytes.TrimSpace(chunk[len(usagePrefix):])); ok {
					g.report(l)
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
