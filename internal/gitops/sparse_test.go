package gitops

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sparseClone clones remote as a run's workflow checks it out: depth 1,
// no file contents up front (a partial clone), and a sparse worktree of
// everything but the ledger's history, plus the newest ledger file.
func sparseClone(t *testing.T, remote string, newest ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sparse")
	gitCmd(t, ".", "clone", "-q", "--depth", "1", "--filter=blob:none", "--sparse", fileURL(remote), dir)
	gitCmd(t, dir, "sparse-checkout", "set", "--no-cone", "/*", "!/var/schedules/")
	gitCmd(t, dir, append([]string{"sparse-checkout", "add"}, newest...)...)
	return dir
}

// missing lists the objects of HEAD's tree this clone does not have.
func missing(t *testing.T, dir string) string {
	t.Helper()
	return gitCmd(t, dir, "rev-list", "--objects", "--missing=print", "HEAD")
}

func randomBytes(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return string(b)
}

func TestSparsePartialClone(t *testing.T) {
	remote := newRemote(t)
	gitCmd(t, remote, "config", "uploadpack.allowFilter", "true")
	seed := cloneCLI(t, fileURL(remote), false)
	old, newest := "var/schedules/2026-11.ndjson.gz", "var/schedules/2026-11.001.ndjson.gz"
	writeFile(t, seed, old, randomBytes(200<<10))
	writeFile(t, seed, newest, randomBytes(10<<10))
	gitCmd(t, seed, "add", "-A")
	gitCmd(t, seed, "commit", "-q", "-m", "a month")
	gitCmd(t, seed, "push", "-q", "origin", "main")

	dir := sparseClone(t, remote, "/"+newest)
	if _, err := os.Stat(filepath.Join(dir, old)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is checked out: %v", old, err)
	}
	oldBlob := gitCmd(t, seed, "rev-parse", "HEAD:"+old)
	if !strings.Contains(missing(t, dir), "?"+oldBlob) {
		t.Fatalf("the clone fetched %s", old)
	}

	r := open(t, dir)
	appendFile(t, dir, newest, "more")
	writeFile(t, dir, "var/state/snapshot", "state\n")
	if _, changed, err := r.Commit("run 1", newest, "var/state/snapshot"); err != nil || !changed {
		t.Fatalf("commit: %v %v", changed, err)
	}
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Another runner pushes first; this one syncs and pushes again.
	gitCmd(t, seed, "pull", "-q", "origin", "main")
	appendFile(t, seed, newest, "theirs")
	gitCmd(t, seed, "commit", "-q", "-am", "another runner")
	gitCmd(t, seed, "push", "-q", "origin", "main")
	appendFile(t, dir, newest, "ours")
	if _, _, err := r.Commit("run 2", newest); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background()); !errors.Is(err, ErrRejected) {
		t.Fatalf("push after another runner's: %v", err)
	}
	if err := r.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Materialize("var/schedules/"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, newest); !strings.HasSuffix(got, "moretheirs") {
		t.Fatalf("%s not synced", newest)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("sync checked out %s: %v", old, err)
	}
	appendFile(t, dir, newest, "ours")
	if _, _, err := r.Commit("run 2", newest); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(missing(t, dir), "?"+oldBlob) {
		t.Fatalf("a sync fetched %s", old)
	}
	assertRemoteOK(t, remote, "main")
	assertClean(t, dir)
	gitCmd(t, seed, "pull", "-q", "origin", "main")
	if got := readFile(t, seed, newest); !strings.HasSuffix(got, "moretheirsours") {
		t.Fatal("the remote does not have both runners' appends")
	}
}

func TestOpenRefusesOtherExtensions(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	gitCmd(t, dir, "config", "core.repositoryformatversion", "1")
	gitCmd(t, dir, "config", "extensions.worktreeConfig", "true")
	open(t, dir)
	gitCmd(t, dir, "config", "extensions.somethingNew", "true")
	if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "somethingnew") {
		t.Fatalf("unknown extension: %v", err)
	}
}
