//go:build linux

package gitops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGitInCheckoutRefused: `git commit` closes the index lock while its
// hooks run and renames it afterwards, so a lock no process has open may
// still be in use: a live git process working in the checkout keeps it.
func TestGitInCheckoutRefused(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch .hook-running\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, "README.md", "more\n")
	cmd := exec.Command("git", "commit", "-q", "-a", "-m", "by hand") // -a: the lock holds the new index during the hook
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, ".hook-running")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("git did not run its hook")
		}
	}
	lock := filepath.Join(dir, ".git", "index.lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git commit holds no index lock while its hook runs: %v", err)
	}
	if pid := lockHolderPID(t, lock); pid != 0 {
		t.Fatalf("pid %d has the lock open; this test is about a lock no process has open", pid)
	}
	r := open(t, dir, func(o *Options) { o.Started = time.Now() })
	writeFile(t, dir, ledger, "line 1\n")
	_, _, err := r.Commit("astra: run", ledger)
	want := fmt.Sprintf("held by pid %d, a git process working in this checkout", cmd.Process.Pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Commit while git works in the checkout = %v, want %q", err, want)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git's lock was removed: %v", err)
	}
}

// lockHolderPID is the pid that has lock open, if any.
func lockHolderPID(t *testing.T, lock string) int {
	t.Helper()
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if pid, err := strconv.Atoi(p.Name()); err == nil && holds(filepath.Join("/proc", p.Name()), "index.lock", fi) {
			return pid
		}
	}
	return 0
}
