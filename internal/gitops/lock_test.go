package gitops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// staleLock writes .git/index.lock as a killed process leaves it, last
// written at mtime.
func staleLock(t *testing.T, dir string, mtime time.Time) string {
	t.Helper()
	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, []byte("DIRC half an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lock, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return lock
}

// holdLock starts a real process that creates .git/index.lock and keeps it
// open, as git does while it writes the index. It returns the process.
func holdLock(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("lock holders are found through /proc")
	}
	cmd := exec.Command("sh", "-c", `exec 3<>.git/index.lock && echo ready && exec sleep 600`)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("lock holder: %q %v", line, err)
	}
	return cmd
}

func assertNoLock(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git", "index.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(".git/index.lock is there after astra: %v", err)
	}
}

// TestStaleIndexLockRecovered: a lock left by a process that is gone
// before this run started is removed, with a warning, and the commit goes
// through.
func TestStaleIndexLockRecovered(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	staleLock(t, dir, time.Now().Add(-time.Hour))
	r := open(t, dir, func(o *Options) { o.Started = time.Now() })
	writeFile(t, dir, ledger, "line 1\n")
	if _, changed, err := r.Commit("astra: run", ledger); err != nil || !changed {
		t.Fatalf("Commit over a stale lock = %v, %v", changed, err)
	}
	w := r.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "removed a stale .git/index.lock") {
		t.Fatalf("warnings = %q", w)
	}
	assertNoLock(t, dir)
	assertClean(t, dir)
	if left, _ := filepath.Glob(filepath.Join(dir, ".git", "index.lock*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestKilledLockHolder: a process killed while it holds the lock leaves
// the file; the next run (started after) finds no holder and recovers.
func TestKilledLockHolder(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	holder := holdLock(t, dir)
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	fi, err := os.Stat(filepath.Join(dir, ".git", "index.lock"))
	if err != nil {
		t.Fatal(err)
	}
	r := open(t, dir, func(o *Options) { o.Started = fi.ModTime().Add(time.Second) }) // the next run
	writeFile(t, dir, ledger, "line 1\n")
	if _, _, err := r.Commit("astra: run", ledger); err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings()) != 1 {
		t.Fatalf("warnings = %q", r.Warnings())
	}
	assertClean(t, dir)
}

// TestLiveLockHolderRefused: a lock a live process holds open is never
// taken, however old; nothing is committed and the error names the pid.
func TestLiveLockHolderRefused(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	holder := holdLock(t, dir)
	lock := filepath.Join(dir, ".git", "index.lock")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	head := gitCmd(t, dir, "rev-parse", "HEAD")
	r := open(t, dir, func(o *Options) { o.Started = time.Now() })
	writeFile(t, dir, ledger, "line 1\n")
	_, _, err := r.Commit("astra: run", ledger)
	want := fmt.Sprintf("(.git/index.lock held by pid %d)", holder.Process.Pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was committed") {
		t.Fatalf("Commit with a held lock = %v, want ErrLocked naming %q", err, want)
	}
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("the branch moved although the commit was refused")
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the holder's lock was removed: %v", err)
	}
	if len(r.Warnings()) != 0 {
		t.Fatalf("warnings = %q", r.Warnings())
	}
}

// TestFreshLockRefused: a lock written after this run started may be a
// process that is just starting to use the checkout: never removed.
func TestFreshLockRefused(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	lock := staleLock(t, dir, time.Now())
	r := open(t, dir, func(o *Options) { o.Started = time.Now().Add(-time.Hour) })
	writeFile(t, dir, ledger, "line 1\n")
	_, _, err := r.Commit("astra: run", ledger)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "(.git/index.lock created after this run started)") {
		t.Fatalf("Commit with a fresh lock = %v", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("a fresh lock was removed: %v", err)
	}
	// A Sync with nothing to change does not need the lock.
	if err := r.Sync(context.Background()); err != nil {
		t.Fatalf("Sync with nothing to do = %v", err)
	}
}

// TestSyncRefusesHeldLock: Sync leaves the branch and worktree alone when
// the index is locked.
func TestSyncRefusesHeldLock(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	other := cloneCLI(t, fileURL(remote), false)
	o := open(t, other)
	writeFile(t, other, ledger, "from another runner\n")
	if _, _, err := o.Commit("other", ledger); err != nil {
		t.Fatal(err)
	}
	if err := o.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	head := gitCmd(t, dir, "rev-parse", "HEAD")
	staleLock(t, dir, time.Now())
	r := open(t, dir, func(o *Options) { o.Started = time.Now().Add(-time.Hour) })
	if err := r.Sync(context.Background()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Sync with a held lock = %v", err)
	}
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("Sync moved the branch although the index was locked")
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ledger))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Sync wrote files although the index was locked")
	}
}

// TestNoLockLeftOnFailure: when writing the index fails, the lock astra
// took is removed, on every path that takes it, and the error says what
// happened.
func TestNoLockLeftOnFailure(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir)
	index := filepath.Join(dir, ".git", "index")
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := func() {
		bad := append([]byte(nil), good...)
		bad[len(bad)-1] ^= 1 // checksum mismatch
		if err := os.WriteFile(index, bad, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	corrupt()
	writeFile(t, dir, ledger, "line 1\n")
	h, changed, err := r.Commit("astra: run", ledger)
	if err == nil || !changed || h == "" || !strings.Contains(err.Error(), "is on main, but write .git/index") || !strings.Contains(err.Error(), "git reset") {
		t.Fatalf("Commit with a corrupt index = %q, %v, %v", h, changed, err)
	}
	assertNoLock(t, dir)

	corrupt()
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(ledger))); err != nil {
		t.Fatal(err)
	}
	if err := r.Materialize("var/"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Materialize with a corrupt index = %v", err)
	}
	assertNoLock(t, dir)

	other := cloneCLI(t, fileURL(remote), false)
	o := open(t, other)
	writeFile(t, other, "var/other", "x\n")
	if _, _, err := o.Commit("other", "var/other"); err != nil {
		t.Fatal(err)
	}
	if err := o.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, good, 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "reset", "-q", "--hard", "HEAD")
	corrupt()
	if err := r.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Sync with a corrupt index = %v", err)
	}
	assertNoLock(t, dir)
}
