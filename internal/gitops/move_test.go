package gitops

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// protect installs a hook on the bare remote that refuses updates of main
// the way GitHub answers a push to a protected branch.
func protect(t *testing.T, remote, hook string) {
	t.Helper()
	script := "#!/bin/sh\n"
	if hook == "update" {
		script += `[ "$1" = refs/heads/main ] || exit 0` + "\n"
	} else {
		script += `while read old new ref; do [ "$ref" = refs/heads/main ] && refused=1; done; [ -z "$refused" ] && exit 0` + "\n"
	}
	script += `echo "error: GH006: Protected branch update failed for refs/heads/main." >&2
echo "error: Changes must be made through a pull request." >&2
exit 1
`
	if err := os.MkdirAll(filepath.Join(remote, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(remote, "hooks", hook), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestPushToProtectedBranch: a refusal by branch protection is ErrProtected
// (never a race to retry), quotes the remote's reason, and leaves other
// branches pushable; over file:// (git receive-pack) and smart HTTP.
func TestPushToProtectedBranch(t *testing.T) {
	for _, tc := range []struct{ name, hook string }{
		{"file-pre-receive", "pre-receive"},
		{"file-update", "update"},
		{"http-pre-receive", "pre-receive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dir, remote string
			var opts []func(*Options)
			if strings.HasPrefix(tc.name, "http") {
				dir, remote, _ = httpClone(t)
				opts = append(opts, func(o *Options) { o.Token = testToken })
			} else {
				remote = newRemote(t)
				dir = cloneCLI(t, fileURL(remote), true)
			}
			protect(t, remote, tc.hook)
			before := gitCmd(t, remote, "rev-parse", "main")
			err := commitAndPush(t, open(t, dir, opts...), dir)
			if !errors.Is(err, ErrProtected) || errors.Is(err, ErrRejected) {
				t.Fatalf("push to protected main = %v, want ErrProtected (not ErrRejected)", err)
			}
			for _, want := range []string{"main is a protected branch", "GH006: Protected branch update failed for refs/heads/main."} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), testToken) {
				t.Fatal("the error leaks the token")
			}
			if gitCmd(t, remote, "rev-parse", "main") != before {
				t.Fatal("protected main moved")
			}
			// Another branch of the same remote takes pushes.
			r := open(t, dir, append(opts, func(o *Options) { o.Branch = "astra-state" })...)
			if err := commitAndPush(t, r, dir); err != nil {
				t.Fatalf("push to an unprotected branch: %v", err)
			}
		})
	}
}

// TestPushInterrupted: a push cancelled by an interrupt says so; it is not
// a network problem to investigate.
func TestPushInterrupted(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir)
	writeFile(t, dir, ledger, "event\n")
	if _, _, err := r.Commit("run", ledger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Push(ctx)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "network") {
		t.Fatalf("cancelled push = %v, want an interruption", err)
	}
}

// TestPushFiles moves files between branches of the remote without
// touching the checkout: a new branch without history, then commits on
// top that replace what is under the paths, each a compare-and-swap.
func TestPushFiles(t *testing.T) {
	ctx := context.Background()
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), true)
	writeFile(t, dir, "var/local-only", "x\n") // an untracked file in the worktree stays
	r := open(t, dir)
	headBefore, indexBefore := gitCmd(t, dir, "rev-parse", "HEAD"), gitCmd(t, dir, "ls-files", "-s")
	paths := []string{"var/schedules/", "var/memory/"}

	c1 := pushNewBranch(t, r, remote, paths)

	// On top of main: the files under paths are replaced, the rest kept.
	main, err := r.FetchBranch(ctx, "main")
	if err != nil || main != headBefore {
		t.Fatalf("FetchBranch(main) = %q, %v", main, err)
	}
	got, err := r.Files(c1, paths...)
	if err != nil || len(got) != 2 || string(got[ledger]) != "l1\n" {
		t.Fatalf("Files = %q, %v", got, err)
	}
	got[ledger] = []byte("l1\nl2\n")
	delete(got, "var/memory/2025-01.ndjson.gz")
	c2, err := r.PushFiles(ctx, "main", main, paths, got, "astra: the ledger moves back")
	if tip, err := r.RemoteTip(ctx, "main"); err != nil || tip != c2 {
		t.Fatalf("RemoteTip(main) = %q, %v; want the push's %s", tip, err, c2)
	}
	if err != nil {
		t.Fatal(err)
	}
	if gitCmd(t, remote, "rev-parse", "main") != c2 || gitCmd(t, remote, "rev-parse", "main^") != main {
		t.Fatal("main is not the new commit on top of the old tip")
	}
	if got := gitCmd(t, remote, "show", "main:"+ledger); got != "l1\nl2" {
		t.Fatalf("ledger on main = %q", got)
	}
	if gitCmd(t, remote, "show", "main:schedules/a.yaml") != "id: a" {
		t.Fatal("a file outside the paths changed")
	}
	refusedPushes(t, r, main, c2, paths, got)
	assertRemoteOK(t, remote, "main")

	checkoutUntouched(t, r, dir, headBefore, indexBefore, c2)
}

func TestHeadHas(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	r := open(t, dir)
	if has, err := r.HeadHas("var/schedules"); err != nil || has {
		t.Fatalf("HeadHas on an unborn branch = %v, %v", has, err)
	}
	writeFile(t, dir, ledger, "x\n")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "ledger")
	for p, want := range map[string]bool{"var/schedules": true, "var/schedules/": true, ledger: true, "var/memory": false} {
		if has, err := r.HeadHas(p); err != nil || has != want {
			t.Errorf("HeadHas(%s) = %v, %v; want %v", p, has, err, want)
		}
	}
}

// checkoutUntouched: PushFiles never touched the checkout, but updated its
// remote-tracking branch to c2, and what it pushed is readable beside it.
func checkoutUntouched(t *testing.T, r *Repo, dir, headBefore, indexBefore, c2 string) {
	t.Helper()
	if gitCmd(t, dir, "rev-parse", "HEAD") != headBefore || gitCmd(t, dir, "ls-files", "-s") != indexBefore {
		t.Fatal("PushFiles moved HEAD or changed the index")
	}
	if gitCmd(t, dir, "status", "--porcelain") != "?? var/" {
		t.Fatalf("worktree changed:\n%s", gitCmd(t, dir, "status", "--porcelain"))
	}
	if gitCmd(t, dir, "rev-parse", "origin/main") != c2 {
		t.Fatal("the remote-tracking branch was not updated")
	}
	// What was pushed beside the checkout is readable there, from the
	// branch as the remote has it.
	seen, err := r.RemoteFiles("var/schedules/")
	if err != nil || len(seen) != 1 || string(seen[ledger]) != "l1\nl2\n" {
		t.Fatalf("RemoteFiles = %q, %v", seen, err)
	}
}

// refusedPushes: a stale parent is a lost race, and nothing outside paths
// is written.
func refusedPushes(t *testing.T, r *Repo, main, c2 string, paths []string, got map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.PushFiles(ctx, "main", main, paths, got, "stale"); !errors.Is(err, ErrRejected) {
		t.Fatalf("push from a stale parent = %v, want ErrRejected", err)
	}
	if _, err := r.PushFiles(ctx, "main", c2, paths, map[string][]byte{"schedules/a.yaml": nil}, "outside"); err == nil {
		t.Fatal("PushFiles wrote a file outside its paths")
	}
}

// pushNewBranch creates astra-state holding two files, with no history,
// once: creating it again is a lost race.
func pushNewBranch(t *testing.T, r *Repo, remote string, paths []string) string {
	t.Helper()
	ctx := context.Background()
	if tip, err := r.FetchBranch(ctx, "astra-state"); err != nil || tip != "" {
		t.Fatalf("FetchBranch(absent) = %q, %v", tip, err)
	}
	if tip, err := r.RemoteTip(ctx, "astra-state"); err != nil || tip != "" {
		t.Fatalf("RemoteTip(absent) = %q, %v", tip, err)
	}
	files := map[string][]byte{ledger: []byte("l1\n"), "var/memory/2025-01.ndjson.gz": []byte("m1\n")}
	c1, err := r.PushFiles(ctx, "astra-state", "", paths, files, "astra: the ledger moves here")
	if err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, remote, "ls-tree", "-r", "--name-only", "astra-state"); got != "var/memory/2025-01.ndjson.gz\n"+ledger {
		t.Fatalf("new branch holds:\n%s", got)
	}
	if gitCmd(t, remote, "rev-list", "--count", "astra-state") != "1" {
		t.Fatal("the new branch has history")
	}
	if _, err := r.PushFiles(ctx, "astra-state", "", paths, files, "again"); !errors.Is(err, ErrRejected) {
		t.Fatalf("creating an existing branch = %v, want ErrRejected", err)
	}
	return c1
}

// A tree entry no checkout may have (git refuses to check it out) is
// skipped with a warning: joined to a path it would lead outside the
// checkout.
func TestFilesSkipUnsafeEntries(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), true)
	blob := gitCmd(t, dir, "hash-object", "-w", "--stdin")
	var raw bytes.Buffer
	for _, name := range []string{"..", "../../x", ".git", "ok"} {
		raw.WriteString("100644 " + name + "\x00")
		h, _ := hex.DecodeString(blob)
		raw.Write(h)
	}
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.WriteFile(tree, raw.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := gitCmd(t, dir, "hash-object", "-t", "tree", "--literally", "-w", tree)
	mk := exec.Command("git", "mktree", "--missing")
	mk.Dir, mk.Env, mk.Stdin = dir, gitEnv(), strings.NewReader("040000 tree "+sub+"\tcancel\n")
	out, err := mk.Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	commit := gitCmd(t, dir, "commit-tree", root, "-m", "crafted")
	r := open(t, dir)
	got, err := r.Files(commit, "cancel/")
	if err != nil || len(got) != 1 || got["cancel/ok"] == nil {
		t.Fatalf("Files = %q, %v", got, err)
	}
	if w := strings.Join(r.Warnings(), "\n"); strings.Count(w, "which no checkout may have") != 3 {
		t.Fatalf("warnings: %s", w)
	}
	for _, name := range []string{"", ".", "..", ".git", ".GIT", "a/b", "a\x00"} {
		if safeName(name) {
			t.Errorf("safeName(%q)", name)
		}
	}
}
