package executor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/model"
)

// TestHelperAstra is not a test: TestToolDiesWithAstra runs the test
// binary with this one selected to play astra, running family.sh.
func TestHelperAstra(t *testing.T) {
	dir := os.Getenv("EXECUTOR_HELPER_DIR")
	if dir == "" {
		t.Skip("the astra process of TestToolDiesWithAstra")
	}
	New(Options{}).Run(context.Background(), Request{Tool: execTool("./family.sh", dir), Dir: testdir(t)})
}

// TestToolDiesWithAstra: astra killed with SIGKILL (no handler runs) while
// a tool runs takes the tool, the tool's own children and a daemon it
// started in a session of its own with it (the reaper).
func TestToolDiesWithAstra(t *testing.T) {
	dir := t.TempDir()
	astra := exec.Command(os.Args[0], "-test.run=^TestHelperAstra$")
	astra.Env = append(os.Environ(), "EXECUTOR_HELPER_DIR="+dir)
	if err := astra.Start(); err != nil {
		t.Fatal(err)
	}
	pids := waitPids(t, filepath.Join(dir, "pids"))
	if err := astra.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = astra.Wait()
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// TestChildrenDieWithTheTool: a tool that exits leaving a child behind
// does not leave it running.
func TestChildrenDieWithTheTool(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res := New(Options{}).Run(context.Background(), Request{Tool: execTool("./leave.sh", pidFile), Dir: testdir(t)})
	if res.Status != StatusOK {
		t.Fatalf("%+v", res)
	}
	waitGone(t, waitPids(t, pidFile)[0])
}

// waitPids reads the pids a tool wrote to path, waiting for the file.
func waitPids(t *testing.T, path string) []int {
	t.Helper()
	for i := 0; ; i++ {
		b, err := os.ReadFile(path)
		if err == nil {
			var out []int
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s: %q", path, b)
				}
				out = append(out, pid)
			}
			return out
		}
		if i > 1000 {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits (a few seconds at most) for pid to be dead: gone, or a
// zombie waiting for init to reap it.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; ; i++ {
		if err := syscall.Kill(pid, 0); err != nil || zombie(pid) {
			return
		}
		if i > 250 {
			t.Fatalf("process %d outlived astra", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDaemonLeftBehindIsStopped: a tool that exits 0 leaving a daemon in a
// session of its own, which holds the tool's stdout, ran fine (its wall
// clock stops when it exits, not when its stdout closes), and the daemon
// does not outlive the run.
func TestDaemonLeftBehindIsStopped(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	res := New(Options{KillGrace: 500 * time.Millisecond}).Run(context.Background(), Request{
		Tool: execTool("./daemon.sh", pidFile), Dir: testdir(t), Budget: model.TaskBudget{MaxWallClock: model.Duration(3 * time.Second)}})
	if res.Status != StatusOK || !strings.Contains(res.Output, "daemon started") {
		t.Fatalf("%+v", res)
	}
	waitGone(t, waitPids(t, pidFile)[0])
}

// TestDaemonStoppedWhenCanceled: an interrupted astra (SIGTERM cancels the
// run) stops a tool's daemon too.
func TestDaemonStoppedWhenCanceled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() {
		done <- New(Options{KillGrace: 200 * time.Millisecond}).Run(ctx, Request{Tool: execTool("./family.sh", dir), Dir: testdir(t)})
	}()
	pids := waitPids(t, filepath.Join(dir, "pids"))
	cancel()
	if res := <-done; res.Reason != ReasonCanceled {
		t.Fatalf("%+v", res)
	}
	for _, pid := range pids {
		waitGone(t, pid)
	}
}
