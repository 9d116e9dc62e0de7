package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ledger = "var/schedules/2025-01.ndjson.gz"

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("Open(non-repo) = %v, want 'not a git repository'", err)
	}

	clone := cloneCLI(t, fileURL(newRemote(t)), false)
	_, err = Open(Options{Dir: filepath.Join(clone, "schedules")})
	if err == nil || !strings.Contains(err.Error(), "top level") {
		t.Fatalf("Open(subdir) = %v, want a hint about the top level", err)
	}

	gitCmd(t, clone, "checkout", "-q", "--detach")
	if _, err = Open(Options{Dir: clone}); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Fatalf("Open(detached) = %v, want detached HEAD error", err)
	}
	r := open(t, clone, func(o *Options) { o.Branch = "astra-state" })
	if r.Branch() != "astra-state" || !r.StateBranch() {
		t.Fatalf("Branch() = %q, StateBranch() = %v", r.Branch(), r.StateBranch())
	}
}

func TestNoRemote(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	r := open(t, dir)
	if r.HasRemote() {
		t.Fatal("HasRemote() = true for a repository without remotes")
	}
	// Unborn branch: the first commit has no parent.
	writeFile(t, dir, ledger, "line 1\n")
	h, changed, err := r.Commit("ledger", ledger)
	if err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != h {
		t.Fatalf("HEAD = %s, want %s", got, h)
	}
	assertClean(t, dir)
	if err := r.Push(context.Background()); !errors.Is(err, ErrNoRemote) {
		t.Fatalf("Push without remote = %v, want ErrNoRemote", err)
	}
	if err := r.Sync(context.Background()); !errors.Is(err, ErrNoRemote) {
		t.Fatalf("Sync without remote = %v, want ErrNoRemote", err)
	}
}

// TestCommitAndPush commits and pushes from each kind of checkout astra meets.
func TestCommitAndPush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clone func(t testing.TB, url string) string
	}{
		{"cli", func(t testing.TB, url string) string { return cloneCLI(t, url, false) }},
		{"cli-shallow", func(t testing.TB, url string) string { return cloneCLI(t, url, true) }},
		{"go-git", cloneGoGit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remote := newRemote(t)
			dir := tc.clone(t, fileURL(remote))
			r := open(t, dir)
			if r.Branch() != "main" || !r.HasRemote() || r.StateBranch() {
				t.Fatalf("Branch=%q HasRemote=%v StateBranch=%v", r.Branch(), r.HasRemote(), r.StateBranch())
			}
			ctx := context.Background()
			big := strings.Repeat("{\"event\":\"run.completed\",\"seq\":1}\n", 200)
			writeFile(t, dir, ledger, big)
			writeFile(t, dir, "var/approvals/pending/a.token", "{}\n")
			h1, changed, err := r.Commit("astra: run 1", ledger, "var/approvals/pending/a.token")
			if err != nil || !changed {
				t.Fatalf("Commit = %v, %v", changed, err)
			}
			assertClean(t, dir)
			if err := r.Push(ctx); err != nil {
				t.Fatal(err)
			}
			if got := gitCmd(t, remote, "rev-parse", "main"); got != h1 {
				t.Fatalf("remote main = %s, want %s", got, h1)
			}

			// A second run appends: pushed as a delta against the first version.
			appendFile(t, dir, ledger, "{\"event\":\"run.completed\",\"seq\":2}\n")
			h2, _, err := r.Commit("astra: run 2", ledger)
			if err != nil {
				t.Fatal(err)
			}
			assertClean(t, dir)
			if err := r.Push(ctx); err != nil {
				t.Fatal(err)
			}
			if got := gitCmd(t, remote, "rev-parse", "main"); got != h2 {
				t.Fatalf("remote main = %s, want %s", got, h2)
			}
			if got := gitCmd(t, dir, "rev-parse", "origin/main"); got != h2 {
				t.Fatalf("origin/main = %s after push, want %s", got, h2)
			}
			if got := gitCmd(t, remote, "show", "main:"+ledger); got+"\n" != readFile(t, dir, ledger) {
				t.Fatalf("remote ledger differs from the worktree")
			}
			if msg := gitCmd(t, remote, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "[skip ci]") || !strings.HasPrefix(msg, "astra: run 2") {
				t.Fatalf("commit message = %q", msg)
			}
			if a := gitCmd(t, remote, "log", "-1", "--format=%an <%ae> %aI", "main"); a != "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com> 2025-01-02T03:04:05+00:00" {
				t.Fatalf("author = %q", a)
			}
			assertRemoteOK(t, remote, "main")
			gitCmd(t, dir, "fsck", "--strict", "--no-progress") // the loose objects astra wrote
			// The seed's files are untouched in the new commits.
			if got := gitCmd(t, remote, "show", "main:schedules/a.yaml"); got != "id: a" {
				t.Fatalf("schedules/a.yaml = %q", got)
			}

			// Pushing again is a no-op.
			if err := r.Push(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPushMissingRemoteRepository(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	gitCmd(t, dir, "remote", "set-url", "origin", fileURL(filepath.Join(t.TempDir(), "gone.git")))
	r := open(t, dir)
	writeFile(t, dir, ledger, "x\n")
	if _, _, err := r.Commit("x", ledger); err != nil {
		t.Fatal(err)
	}
	err := r.Push(context.Background())
	if err == nil || errors.Is(err, ErrAuth) || errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "check the remote URL") {
		t.Fatalf("push to a missing repository = %v", err)
	}
}

func TestCommitNoChange(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	head := gitCmd(t, dir, "rev-parse", "HEAD")
	writeFile(t, dir, "schedules/a.yaml", "id: a\n") // same content as committed
	h, changed, err := r.Commit("nothing", "schedules/a.yaml", "var/never-existed")
	if err != nil || changed || h != head {
		t.Fatalf("Commit = %q, %v, %v; want %s, false, nil", h, changed, err, head)
	}
	if got := gitCmd(t, dir, "rev-parse", "HEAD"); got != head {
		t.Fatal("a no-op commit moved HEAD")
	}
}

func TestCommitPathValidation(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	for _, p := range []string{"../x", ".git/config", "var/../../x", "", "schedules"} {
		if _, _, err := r.Commit("bad", p); err == nil {
			t.Errorf("Commit(%q) succeeded, want an error", p)
		}
	}
	// Absolute paths inside the worktree are accepted.
	writeFile(t, dir, "var/x", "x\n")
	if _, changed, err := r.Commit("abs", filepath.Join(dir, "var/x")); err != nil || !changed {
		t.Fatalf("Commit(abs) = %v, %v", changed, err)
	}
	assertClean(t, dir)
}

func TestCommitDeletions(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir)
	writeFile(t, dir, "var/approvals/pending/a.token", "a\n")
	writeFile(t, dir, "var/approvals/pending/b.token", "b\n")
	writeFile(t, dir, "var/approvals/approved.ndjson.gz", "x\n")
	if _, _, err := r.Commit("add", "var/approvals/pending/a.token", "var/approvals/pending/b.token", "var/approvals/approved.ndjson.gz"); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "var/approvals/pending"))
	if _, changed, err := r.Commit("consume", "var/approvals/pending/a.token", "var/approvals/pending/b.token"); err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	files := gitCmd(t, dir, "ls-tree", "-r", "-t", "--name-only", "HEAD")
	if strings.Contains(files, "pending") {
		t.Fatalf("deleted files (or their emptied directory) still in the tree:\n%s", files)
	}
	if !strings.Contains(files, "var/approvals/approved.ndjson.gz") {
		t.Fatalf("sibling file lost:\n%s", files)
	}
	assertClean(t, dir)

	// Deleting a whole directory by its path removes the subtree.
	os.RemoveAll(filepath.Join(dir, "var"))
	if _, _, err := r.Commit("drop var", "var"); err != nil {
		t.Fatal(err)
	}
	if files := gitCmd(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "var/") {
		t.Fatalf("var/ still in the tree:\n%s", files)
	}
	assertClean(t, dir)
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertRemoteOK(t, remote, "main")
}

func TestCommitFileBecomesDirectory(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	os.Remove(filepath.Join(dir, "README.md"))
	writeFile(t, dir, "README.md/inner", "now a directory\n")
	if _, _, err := r.Commit("swap", "README.md/inner", "README.md"); err == nil {
		t.Fatal("conflicting paths accepted")
	}
	if _, _, err := r.Commit("swap", "README.md/inner"); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "ls-tree", "-r", "--name-only", "HEAD", "README.md"); got != "README.md/inner" {
		t.Fatalf("tree has %q", got)
	}
	assertClean(t, dir)

	// And back: the directory's file is gone because a file replaced it.
	os.RemoveAll(filepath.Join(dir, "README.md"))
	writeFile(t, dir, "README.md", "a file again\n")
	if _, _, err := r.Commit("unswap", "README.md/inner"); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "ls-tree", "-r", "--name-only", "HEAD", "README.md"); got != "" {
		t.Fatalf("tree still has %q", got)
	}
	if _, _, err := r.Commit("unswap", "README.md"); err != nil {
		t.Fatal(err)
	}
	assertClean(t, dir)
}

func TestCommitExecutableAndSymlink(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	writeFile(t, dir, "scripts/run.sh", "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "scripts/run.sh"), 0o755)
	if err := os.Symlink("run.sh", filepath.Join(dir, "scripts/link")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	if _, _, err := r.Commit("modes", "scripts/run.sh", "scripts/link"); err != nil {
		t.Fatal(err)
	}
	got := gitCmd(t, dir, "ls-tree", "HEAD", "scripts/")
	if !strings.Contains(got, "100755 blob") || !strings.Contains(got, "120000 blob") {
		t.Fatalf("modes not recorded:\n%s", got)
	}
	assertClean(t, dir)
}

// TestNonFastForward is the compare-and-swap of the spec: the second pusher
// is rejected, syncs, re-applies and pushes; history stays linear.
func TestNonFastForward(t *testing.T) {
	for _, shallow := range []bool{false, true} {
		name := map[bool]string{false: "full", true: "shallow"}[shallow]
		t.Run(name, func(t *testing.T) { nonFastForward(t, shallow) })
	}
}

func nonFastForward(t *testing.T, shallow bool) {
	remote := newRemote(t)
	ctx := context.Background()
	a, b := cloneCLI(t, fileURL(remote), shallow), cloneCLI(t, fileURL(remote), shallow)
	ra, rb := open(t, a), open(t, b)

	writeFile(t, a, ledger, "a1\n")
	writeFile(t, a, "var/a-only", "a\n")
	if _, _, err := ra.Commit("a", ledger, "var/a-only"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b, ledger, "b1\n")
	if _, _, err := rb.Commit("b", ledger); err != nil {
		t.Fatal(err)
	}
	if err := ra.Push(ctx); err != nil {
		t.Fatal(err)
	}
	err := rb.Push(ctx)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("second push = %v, want ErrRejected", err)
	}
	if !strings.Contains(err.Error(), "origin") {
		t.Errorf("rejection %q does not name the remote", err)
	}

	if err := rb.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// b's worktree now shows a's state, and is clean.
	if got := readFile(t, b, ledger); got != "a1\n" {
		t.Fatalf("after Sync ledger = %q, want a's", got)
	}
	if got := readFile(t, b, "var/a-only"); got != "a\n" {
		t.Fatalf("after Sync var/a-only = %q", got)
	}
	assertClean(t, b)
	// Re-apply b's event on top and push.
	appendFile(t, b, ledger, "b1\n")
	hb, _, err := rb.Commit("b again", ledger)
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, remote, "rev-parse", "main"); got != hb {
		t.Fatalf("remote main = %s, want %s", got, hb)
	}
	if got := gitCmd(t, remote, "show", "main:"+ledger); got != "a1\nb1" {
		t.Fatalf("remote ledger = %q", got)
	}
	assertRemoteOK(t, remote, "main")
	if n := gitCmd(t, remote, "rev-list", "--count", "main"); n != "4" {
		t.Fatalf("remote has %s commits, want 4 (2 seed + a + b)", n)
	}
	syncKeepsLocalEdits(t, ra, a)
}

// syncKeepsLocalEdits: Sync refuses to overwrite uncommitted local edits
// to files the remote changed, and keeps edits to files it did not change.
func syncKeepsLocalEdits(t *testing.T, ra *Repo, a string) {
	t.Helper()
	ctx := context.Background()
	writeFile(t, a, ledger, "edited locally\n")
	writeFile(t, a, "var/a-only", "edited locally\n")
	if err := ra.Sync(ctx); !errors.Is(err, ErrLocalChanges) || !strings.Contains(err.Error(), ledger) {
		t.Fatalf("Sync over a local edit = %v, want ErrLocalChanges naming %s", err, ledger)
	}
	if got := readFile(t, a, ledger); got != "edited locally\n" {
		t.Fatal("Sync touched a locally edited file")
	}
	writeFile(t, a, ledger, "a1\n")
	if err := ra.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a, ledger); got != "a1\nb1\n" {
		t.Fatalf("after Sync ledger = %q", got)
	}
	if got := readFile(t, a, "var/a-only"); got != "edited locally\n" {
		t.Fatal("Sync reverted an edit to a file the remote did not change")
	}
	if out := gitCmd(t, a, "status", "--porcelain"); out != "M var/a-only" {
		t.Fatalf("git status = %q, want only the local edit", out)
	}
}

// otherCheckoutContinues: another (shallow) checkout of main picks the
// state branch up, materializes it under var/ and continues it.
func otherCheckoutContinues(t *testing.T, remote string, state func(*Options)) {
	t.Helper()
	ctx := context.Background()
	other := cloneCLI(t, fileURL(remote), true)
	ro := open(t, other, state)
	writeFile(t, other, "var/stale-local-file", "x\n")
	if err := ro.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ro.Materialize("var/"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, other, ledger); got != "s1\n" {
		t.Fatalf("materialized ledger = %q", got)
	}
	if _, err := os.Stat(filepath.Join(other, "var/stale-local-file")); !os.IsNotExist(err) {
		t.Fatal("Materialize kept a file the branch does not have")
	}
	if _, err := os.Stat(filepath.Join(other, "README.md")); err != nil {
		t.Fatal("Materialize touched files outside var/")
	}
	appendFile(t, other, ledger, "s2\n")
	h2, _, err := ro.Commit("state 2", ledger)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, remote, "rev-parse", "astra-state"); got != h2 {
		t.Fatalf("remote astra-state = %s, want %s", got, h2)
	}
	if gitCmd(t, other, "status", "--porcelain", "--untracked-files=no") != "" {
		t.Fatal("state-branch run changed tracked files on main")
	}
	assertRemoteOK(t, remote, "astra-state")
}

// TestStateBranch: main is checked out, astra writes to astra-state.
func TestStateBranch(t *testing.T) {
	remote := newRemote(t)
	ctx := context.Background()
	dir := cloneCLI(t, fileURL(remote), true)
	state := func(o *Options) { o.Branch = "astra-state" }
	r := open(t, dir, state)
	mainBefore := gitCmd(t, dir, "rev-parse", "main")
	indexBefore := gitCmd(t, dir, "ls-files", "-s")

	if err := r.Sync(ctx); !errors.Is(err, ErrNoRemoteBranch) {
		t.Fatalf("Sync of a new state branch = %v, want ErrNoRemoteBranch", err)
	}
	writeFile(t, dir, ledger, "s1\n")
	h1, changed, err := r.Commit("state 1", ledger)
	if err != nil || !changed {
		t.Fatalf("Commit = %v, %v", changed, err)
	}
	if got := gitCmd(t, dir, "rev-parse", "astra-state"); got != h1 {
		t.Fatalf("astra-state = %s, want %s", got, h1)
	}
	if gitCmd(t, dir, "rev-parse", "main") != mainBefore || gitCmd(t, dir, "symbolic-ref", "HEAD") != "refs/heads/main" {
		t.Fatal("state-branch commit moved main or HEAD")
	}
	if gitCmd(t, dir, "ls-files", "-s") != indexBefore {
		t.Fatal("state-branch commit changed the index")
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, remote, "rev-parse", "astra-state"); got != h1 {
		t.Fatalf("remote astra-state = %s, want %s", got, h1)
	}
	if got := gitCmd(t, remote, "rev-parse", "main"); got != mainBefore {
		t.Fatal("pushing the state branch changed remote main")
	}

	otherCheckoutContinues(t, remote, state)

	// The first checkout is now behind: its push is rejected; Sync +
	// Materialize bring it up to date.
	appendFile(t, dir, ledger, "s3\n")
	if _, _, err := r.Commit("state 3", ledger); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); !errors.Is(err, ErrRejected) {
		t.Fatalf("push = %v, want ErrRejected", err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Materialize("var"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ledger); got != "s1\ns2\n" {
		t.Fatalf("after Sync+Materialize ledger = %q", got)
	}
	if gitCmd(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatal("state-branch Sync moved main")
	}
}

func TestMaterializeCheckedOut(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir)
	writeFile(t, dir, ledger, "x\n")
	if _, _, err := r.Commit("x", ledger); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ledger, "garbage\n")
	writeFile(t, dir, "var/untracked", "u\n")
	if err := r.Materialize("var/"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, ledger); got != "x\n" {
		t.Fatalf("ledger = %q", got)
	}
	assertClean(t, dir)
}

func TestSpills(t *testing.T) {
	remote := newRemote(t)
	ctx := context.Background()
	dir := cloneCLI(t, fileURL(remote), true)
	r := open(t, dir)

	names, err := r.ListSpills(ctx)
	if err != nil || len(names) != 0 {
		t.Fatalf("ListSpills = %v, %v; want none", names, err)
	}
	files := map[string][]byte{
		ledger:               []byte("unpushed events\n"),
		"var/approvals/x.gz": {0x1f, 0x8b, 0, 1, 2},
	}
	if err := r.PushSpill(ctx, "run-42.1", files, "spill run 42"); err != nil {
		t.Fatal(err)
	}
	if err := r.PushSpill(ctx, "run-42.1", files, "again"); !errors.Is(err, ErrRejected) {
		t.Fatalf("duplicate spill = %v, want ErrRejected", err)
	}
	for _, bad := range []string{"../evil", "a/b", "x.lock", "trailing.", ""} {
		if err := r.PushSpill(ctx, bad, files, "x"); err == nil {
			t.Fatalf("invalid spill name %q accepted", bad)
		}
	}
	assertRemoteOK(t, remote, "astra/spill/run-42.1")

	other := open(t, cloneCLI(t, fileURL(remote), true))
	names, err = other.ListSpills(ctx)
	if err != nil || len(names) != 1 || names[0] != "run-42.1" {
		t.Fatalf("ListSpills = %v, %v", names, err)
	}
	got, err := other.ReadSpill(ctx, "run-42.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("ReadSpill returned %d files, want %d", len(got), len(files))
	}
	for p, want := range files {
		if string(got[p]) != string(want) {
			t.Fatalf("ReadSpill[%s] = %q, want %q", p, got[p], want)
		}
	}
	if err := other.DeleteSpill(ctx, "run-42.1"); err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteSpill(ctx, "run-42.1"); err != nil {
		t.Fatalf("deleting a deleted spill = %v", err)
	}
	if names, err := r.ListSpills(ctx); err != nil || len(names) != 0 {
		t.Fatalf("after delete ListSpills = %v, %v", names, err)
	}
	if _, err := r.ReadSpill(ctx, "run-42.1"); err == nil {
		t.Fatal("ReadSpill of a deleted spill succeeded")
	}
	// A spill kept: moved where no run lists it, its commit unchanged.
	if err := r.PushSpill(ctx, "run-43", files, "spill run 43"); err != nil {
		t.Fatal(err)
	}
	spilled := gitCmd(t, remote, "rev-parse", "astra/spill/run-43")
	for range 2 { // again: nothing to do
		if err := other.KeepSpill(ctx, "run-43", SpillRefused); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := r.ListSpills(ctx); err != nil || len(names) != 0 {
		t.Fatalf("after keep ListSpills = %v, %v", names, err)
	}
	if kept := gitCmd(t, remote, "rev-parse", "astra/spill-refused/run-43"); kept != spilled {
		t.Fatalf("kept spill at %s, want %s", kept, spilled)
	}
	// Spills never touch the branch.
	if gitCmd(t, remote, "rev-parse", "main") != gitCmd(t, dir, "rev-parse", "main") {
		t.Fatal("spill moved main")
	}
}

// TestLinkedWorktree: astra may run in a `git worktree add` checkout, whose
// index and HEAD live apart from the shared objects and refs.
func TestLinkedWorktree(t *testing.T) {
	remote := newRemote(t)
	main := cloneCLI(t, fileURL(remote), false)
	wt := filepath.Join(t.TempDir(), "wt")
	gitCmd(t, main, "worktree", "add", "-q", "-b", "work", wt)
	r := open(t, wt)
	if r.Branch() != "work" {
		t.Fatalf("Branch() = %q", r.Branch())
	}
	writeFile(t, wt, ledger, "w\n")
	h, _, err := r.Commit("wt", ledger)
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, wt)
	assertClean(t, main)
	if got := gitCmd(t, main, "rev-parse", "work"); got != h {
		t.Fatalf("work = %s, want %s", got, h)
	}
}

// TestPushIsThin: a push after appending to a large file sends about the
// appended bytes, not the file.
func TestPushIsThin(t *testing.T) {
	remote := newRemote(t)
	srv := newGitHTTPServer(t, filepath.Dir(remote), "")
	dir := cloneCLI(t, fileURL(remote), true)
	gitCmd(t, dir, "remote", "set-url", "origin", srv.URL+"/remote.git")
	r := open(t, dir)
	ctx := context.Background()
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*7919 + i/251) // incompressible enough
	}
	writeFile(t, dir, ledger, string(big))
	if _, _, err := r.Commit("big", ledger); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	first := srv.pushed.Load()
	appendFile(t, dir, ledger, strings.Repeat("appended event\n", 100))
	if _, _, err := r.Commit("append", ledger); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	second := srv.pushed.Load() - first
	if second > 16<<10 {
		t.Fatalf("appending 1.5 KB to a 1 MiB file pushed %d bytes; want a delta (first push: %d)", second, first)
	}
	assertRemoteOK(t, remote, "main")
	if got := gitCmd(t, remote, "cat-file", "-s", "main:"+ledger); got != "1050076" {
		t.Fatalf("remote ledger size = %s", got)
	}
}
