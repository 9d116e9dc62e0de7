package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestCommitMessages(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir)
	var want []string
	for i := range 3 {
		writeFile(t, dir, ledger, strings.Repeat("line\n", i+1))
		h, _, err := r.Commit(fmt.Sprintf("astra: run %d\n\nLedger-Head: x 1 y", i+1), ledger)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{h}, want...)
	}
	// A merge into the branch: its first parent is astra's line.
	gitCmd(t, dir, "checkout", "-q", "-b", "side", "HEAD~1")
	writeFile(t, dir, "side.txt", "x\n")
	gitCmd(t, dir, "add", "side.txt")
	gitCmd(t, dir, "commit", "-q", "-m", "side work")
	gitCmd(t, dir, "checkout", "-q", "main")
	gitCmd(t, dir, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	merge := gitCmd(t, dir, "rev-parse", "HEAD")

	msgs, err := open(t, dir).CommitMessages(4)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[0].Commit != merge || !strings.HasPrefix(msgs[0].Message, "merge side") {
		t.Fatalf("messages = %+v", msgs)
	}
	for i, h := range want {
		if msgs[i+1].Commit != h || !strings.Contains(msgs[i+1].Message, "Ledger-Head: x 1 y") {
			t.Fatalf("message %d = %+v, want commit %s", i+1, msgs[i+1], h)
		}
	}
	if msgs, _ := open(t, dir).CommitMessages(100); len(msgs) != 4+2 { // and the two seed commits
		t.Fatalf("%d messages in the whole history, want 6", len(msgs))
	}

	// A shallow clone has the tip only.
	shallow := cloneCLI(t, fileURL(remote), true)
	msgs, err = open(t, shallow).CommitMessages(50)
	if err != nil || len(msgs) != 1 || msgs[0].Message != "seed 2\n" {
		t.Fatalf("shallow clone: %+v %v", msgs, err)
	}

	// An unborn branch has none.
	empty := t.TempDir()
	gitCmd(t, empty, "init", "-q", "-b", "main")
	if msgs, err := open(t, empty).CommitMessages(50); err != nil || len(msgs) != 0 {
		t.Fatalf("unborn branch: %+v %v", msgs, err)
	}
}

func TestFileSizes(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), true)
	r := open(t, dir)
	check := func(name string, f func(string) (int64, bool, error), path string, size int64, ok bool) {
		t.Helper()
		n, found, err := f(path)
		if err != nil || n != size || found != ok {
			t.Fatalf("%s(%s) = %d, %v, %v; want %d, %v", name, path, n, found, err, size, ok)
		}
	}
	check("RemoteFileSize", r.RemoteFileSize, ledger, 0, false)
	writeFile(t, dir, ledger, "pushed\n")
	if _, _, err := r.Commit("one", ledger); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, ledger, "committed\n")
	if _, _, err := r.Commit("two", ledger); err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, ledger, "on disk only\n")
	check("RemoteFileSize", r.RemoteFileSize, ledger, 7, true)
	check("CommittedFileSize", r.CommittedFileSize, ledger, 17, true)
	check("RemoteFileSize", r.RemoteFileSize, "var/schedules/none.ndjson.gz", 0, false)
	check("CommittedFileSize", r.CommittedFileSize, "var", 0, false) // a directory
	if _, _, err := r.RemoteFileSize("../outside"); err == nil {
		t.Fatal("a path outside the worktree was accepted")
	}

	// A state branch that is not on the remote yet has no tracking branch.
	s := open(t, dir, func(o *Options) { o.Branch = "astra-state" })
	check("RemoteFileSize", s.RemoteFileSize, ledger, 0, false)
	check("CommittedFileSize", s.CommittedFileSize, ledger, 0, false)
}

// TestLastChanges: the commit that last changed a file (or directory) is
// found by walking first parents from HEAD, past astra's own commits; a
// deletion is a change; a shallow clone names its boundary as such.
func TestLastChanges(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	writeFile(t, dir, "schedules/b.yaml", "id: b\n")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "--author", "Alice <alice@example.com>", "-m", "add b")
	added := gitCmd(t, dir, "rev-parse", "HEAD")
	r := open(t, dir)
	for i := range 3 { // astra's ledger commits on top
		writeFile(t, dir, ledger, strings.Repeat("line\n", i+1))
		if _, _, err := r.Commit("astra: run", ledger); err != nil {
			t.Fatal(err)
		}
	}
	check := func(r *Repo, path string, limit int, want string, wantOK, shallow bool) {
		t.Helper()
		all, err := r.LastChanges("", []string{path, "policies/p.yaml"}, limit)
		ch, ok := all[path]
		if err != nil || ok != wantOK || (ok && (ch.Commit != want || ch.Shallow != shallow)) {
			t.Fatalf("LastChanges(%s, %d) = %+v %v %v; want %s %v shallow %v", path, limit, ch, ok, err, want, wantOK, shallow)
		}
	}
	check(r, "schedules/b.yaml", 10, added, true, false)
	check(r, "schedules", 10, added, true, false)
	check(r, "schedules/b.yaml", 3, "", false, false) // not within the last 3 commits
	if all, _ := r.LastChanges("", []string{"schedules/b.yaml"}, 10); all["schedules/b.yaml"].Author != "Alice" || all["schedules/b.yaml"].Email != "alice@example.com" {
		t.Fatalf("author %+v", all)
	}
	seed1 := gitCmd(t, dir, "rev-list", "--max-parents=0", "HEAD")
	check(r, "README.md", 50, seed1, true, false) // added by the root commit
	check(r, "nothing.yaml", 50, "", false, false)

	gitCmd(t, dir, "rm", "-q", "schedules/b.yaml")
	gitCmd(t, dir, "commit", "-q", "-m", "drop b")
	dropped := gitCmd(t, dir, "rev-parse", "HEAD")
	check(open(t, dir), "schedules/b.yaml", 10, dropped, true, false)

	shallow := cloneCLI(t, fileURL(remote), true)
	tip := gitCmd(t, shallow, "rev-parse", "HEAD")
	check(open(t, shallow), "schedules/a.yaml", 10, tip, true, true)
}
