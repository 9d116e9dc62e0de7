package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBranchMovesByRename: a commit writes the branch to refs/heads/<b>.lock
// and renames it over the ref, so a kill leaves the old value or the new
// one, never an empty ref; a lock a killed run left is removed (older than
// this run, held by nobody), and one written after the run started stops it.
func TestBranchMovesByRename(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	ref := filepath.Join(dir, ".git", "refs", "heads", "main")
	lock := ref + ".lock"
	if err := os.WriteFile(lock, nil, 0o644); err != nil { // a killed run's
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	writeFile(t, dir, "var/a.txt", "a\n")
	h, changed, err := r.Commit("one", "var/a.txt")
	if err != nil || !changed {
		t.Fatalf("commit over a stale ref lock: %v", err)
	}
	if b, err := os.ReadFile(ref); err != nil || string(b) != h+"\n" {
		t.Fatalf("refs/heads/main holds %q (%v), want %s", b, err, h)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock is left: %v", err)
	}
	gitCmd(t, dir, "fsck", "--no-dangling")
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != h {
		t.Fatalf("git sees %s, want %s", got, h)
	}

	if err := os.WriteFile(lock, nil, 0o644); err != nil { // someone's, now
		t.Fatal(err)
	}
	writeFile(t, dir, "var/a.txt", "b\n")
	if _, _, err := r.Commit("two", "var/a.txt"); !errors.Is(err, ErrLocked) {
		t.Fatalf("commit over a live ref lock: %v", err)
	}
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != h {
		t.Fatalf("the branch moved to %s under someone's lock", got)
	}
}
