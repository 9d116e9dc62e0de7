package gitops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestUnpushed counts the commits the remote has not seen: none after a
// clone, each commit until a push, none after it; and it says when it
// cannot tell (no remote-tracking branch).
func TestUnpushed(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), true)
	r := open(t, dir)
	count := func(want int, wantKnown bool) {
		t.Helper()
		n, known, err := r.Unpushed()
		if err != nil || n != want || known != wantKnown {
			t.Fatalf("Unpushed = %d, %v, %v; want %d, %v", n, known, err, want, wantKnown)
		}
	}
	count(0, true)
	for i, content := range []string{"a\n", "a\nb\n"} {
		writeFile(t, dir, ledger, content)
		if _, _, err := r.Commit("run", ledger); err != nil {
			t.Fatal(err)
		}
		count(i+1, true)
	}
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	count(0, true)

	// The push reached the remote but the run was killed before noting
	// it: the next push notes it and sends nothing.
	gitCmd(t, dir, "update-ref", "refs/remotes/origin/main", "HEAD~1")
	count(1, true)
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	count(0, true)

	gitCmd(t, dir, "update-ref", "-d", "refs/remotes/origin/main")
	count(0, false)
}

// TestDrift: a sync killed after moving the branch and before writing
// the worktree leaves older (shorter) versions of appended files, or none,
// with the index of the old version (Behind, which Materialize restores);
// a run killed before its commit leaves appends (Ahead); anything else,
// such as a file cut by hand, is Other.
func TestDrift(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	writeFile(t, dir, ledger, "line 1\n")
	writeFile(t, dir, "var/edited.log", "original\n")
	writeFile(t, dir, "var/same.log", "same\n")
	writeFile(t, dir, "var/cut.log", "cut by hand\n")
	old, _, err := r.Commit("run 1", ledger, "var/edited.log", "var/same.log", "var/cut.log")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ledger, "line 1\nline 2\n")
	writeFile(t, dir, "var/other.log", "x\n")
	if _, _, err := r.Commit("run 2", ledger, "var/other.log"); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Drift("var/"); err != nil || len(d.Behind)+len(d.Ahead)+len(d.Other) != 0 {
		t.Fatalf("clean checkout: %+v, %v", d, err)
	}
	// The sync of run 2 moved the branch, then was killed: index and
	// files are still run 1's.
	gitCmd(t, dir, "read-tree", old)
	writeFile(t, dir, ledger, "line 1\n")
	if err := os.Remove(filepath.Join(dir, "var", "other.log")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "var/edited.log", "by hand\n")
	writeFile(t, dir, "var/cut.log", "cut")
	writeFile(t, dir, "var/same.log", "same\nmore\n")
	writeFile(t, dir, "var/new.log", "only here\n")
	d, err := r.Drift("var/")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"var/other.log", ledger}; !slices.Equal(d.Behind, want) {
		t.Errorf("Behind = %q, want %q", d.Behind, want)
	}
	if want := []string{"var/new.log", "var/same.log"}; !slices.Equal(d.Ahead, want) {
		t.Errorf("Ahead = %q, want %q", d.Ahead, want)
	}
	if want := []string{"var/cut.log", "var/edited.log"}; !slices.Equal(d.Other, want) {
		t.Errorf("Other = %q, want %q", d.Other, want)
	}
	if d, err := r.Drift("var/same.log"); err != nil || !slices.Equal(d.Ahead, []string{"var/same.log"}) {
		t.Errorf("one file: %+v, %v", d, err)
	}
	for _, p := range d.Behind {
		if err := r.Materialize(p); err != nil {
			t.Fatal(err)
		}
	}
	if readFile(t, dir, ledger) != "line 1\nline 2\n" || readFile(t, dir, "var/other.log") != "x\n" {
		t.Fatal("not restored")
	}
}

// TestRunLock: one astra run per checkout. A second run (another process,
// or another Repo in this one) is refused with ErrLocked naming the
// holder; once the holder is gone, killed or not, the lock is free.
func TestRunLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no advisory locks")
	}
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	first := open(t, dir)
	unlock, err := first.LockRun()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.LockRun(); err != nil {
		t.Fatalf("again in the same run: %v", err)
	}
	second := open(t, dir)
	_, err = second.LockRun()
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "an astra run holds .git/astra.lock (pid ") {
		t.Fatalf("second run: %v", err)
	}
	unlock() // the first run ends
	if _, err := second.LockRun(); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}

	// A process holding it is killed: the kernel drops its lock.
	dir = cloneCLI(t, fileURL(newRemote(t)), false)
	holder := exec.Command("flock", "-o", "-x", ".git/astra.lock", "sh", "-c", "echo ready; exec sleep 600")
	holder.Dir = dir
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Skipf("flock(1): %v", err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, dir).LockRun(); !errors.Is(err, ErrLocked) {
		t.Fatalf("while held by another process: %v", err)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	if _, err := open(t, dir).LockRun(); err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
}
