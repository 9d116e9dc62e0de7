package gitops

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testSealing is a Sealing whose seal is an HMAC with a secret only the
// test holds: enough to check what gitops hands over and where the seal
// goes. The real format and keys are ledgerkey's, tested there.
func testSealing(secret string) *Sealing {
	mac := func(branch, parent string, entries []Entry) string {
		h := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(h, "%s\n%s\n", branch, parent)
		for _, e := range entries {
			fmt.Fprintf(h, "%s %s\x00", e.Blob, e.Path)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	return &Sealing{
		Paths: []string{"var/"}, Except: []string{"var/approvals/pending/"},
		Sign: func(branch, parent string, entries []Entry) (string, error) {
			return "Test-Seal: " + mac(branch, parent, entries), nil
		},
		Verify: func(branch, parent string, entries []Entry, msg string) error {
			var got string
			for _, l := range strings.Split(msg, "\n") {
				if v, ok := strings.CutPrefix(l, "Test-Seal: "); ok {
					got = v
				}
			}
			if got == "" || got != mac(branch, parent, entries) {
				return errors.New("the seal does not verify")
			}
			return nil
		},
	}
}

func sealed(secret string) func(*Options) {
	return func(o *Options) { o.Sealing = testSealing(secret) }
}

// foreign commits as a writer does, with the git CLI, and returns the hash.
func foreign(t testing.TB, dir, msg string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		writeFile(t, dir, p, c)
	}
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return gitCmd(t, dir, "rev-parse", "HEAD")
}

func TestCommitSeal(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir, sealed("k"))
	writeFile(t, dir, ledger, "line 1\n")
	writeFile(t, dir, "var/approvals/pending/a.token", "{}\n")
	var got []Entry
	sign := r.opts.Sealing.Sign
	r.opts.Sealing.Sign = func(b, p string, e []Entry) (string, error) { got = e; return sign(b, p, e) }
	s1, _, err := r.Commit("astra: run 1", ledger, "var/approvals/pending/a.token")
	if err != nil {
		t.Fatal(err)
	}
	assertClean(t, dir)
	blob := gitCmd(t, dir, "rev-parse", "HEAD:"+ledger)
	if fmt.Sprint(got) != fmt.Sprint([]Entry{{ledger, blob}}) {
		t.Fatalf("sealed entries %v: pending tokens are not sealed", got)
	}
	msg := gitCmd(t, dir, "log", "-1", "--format=%B")
	if lines := strings.Split(msg, "\n"); !strings.HasPrefix(lines[len(lines)-1], "Test-Seal: ") || !strings.Contains(msg, "[skip ci]") {
		t.Fatalf("message %q: want the seal on its last line", msg)
	}
	ctx := context.Background()
	w, err := r.NewestSealed(ctx)
	if err != nil || w.Commit != s1 || !w.Same() || len(w.After) != 0 || fmt.Sprint(w.Entries) != fmt.Sprint(got) {
		t.Fatalf("NewestSealed = %+v, %v", w, err)
	}

	// A person's commits that leave astra's files alone change nothing
	// sealed; a writer's that changes the ledger does.
	h1 := foreign(t, dir, "docs", map[string]string{"README.md": "more\n", "var/approvals/pending/b.token": "{}\n"})
	h2 := foreign(t, dir, "approve it myself\n\nreally", map[string]string{ledger: "line 1\nforged\n", "var/state/snapshot": "x\n"})
	w, err = r.NewestSealed(ctx)
	if err != nil || w.Commit != s1 || w.Same() || fmt.Sprint(w.Changed) != "[var/schedules/2025-01.ndjson.gz var/state/snapshot]" {
		t.Fatalf("NewestSealed = %+v, %v", w, err)
	}
	want := []Foreign{
		{Commit: h2, Author: "Test <test@example.com>", Subject: "approve it myself", Changed: []string{ledger, "var/state/snapshot"}},
		{Commit: h1, Author: "Test <test@example.com>", Subject: "docs"},
	}
	if len(w.After) != 2 || w.After[0].When.IsZero() {
		t.Fatalf("after: %+v", w.After)
	}
	for i := range want {
		want[i].When = w.After[i].When
	}
	if fmt.Sprint(w.After) != fmt.Sprint(want) {
		t.Fatalf("after:\n%+v\nwant\n%+v", w.After, want)
	}

	// Without the key astra makes no commit.
	r.opts.Sealing.Sign = nil
	appendFile(t, dir, ledger, "line 2\n")
	if _, _, err := r.Commit("astra: run 2", ledger); !errors.Is(err, ErrNoKey) {
		t.Fatalf("commit without the key: %v", err)
	}
}

// TestCopiedSealDoesNotVerify: a seal binds the parent, so a writer who
// puts astra's commit (message, seal, tree) on another parent, to rewind
// the ledger after a later commit, gets a commit that is not sealed.
func TestCopiedSealDoesNotVerify(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir, sealed("k"))
	writeFile(t, dir, ledger, "line 1\n")
	s1, _, err := r.Commit("astra: run 1", ledger)
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, ledger, "line 2 (approval consumed)\n")
	s2, _, err := r.Commit("astra: run 2", ledger)
	if err != nil {
		t.Fatal(err)
	}
	// s1's tree and message on top of s2: the ledger as before the
	// approval was consumed.
	msg := gitCmd(t, dir, "log", "-1", "--format=%B", s1)
	copied := gitCmd(t, dir, "commit-tree", s1+"^{tree}", "-p", s2, "-m", msg)
	gitCmd(t, dir, "reset", "-q", "--hard", copied)
	w, err := r.NewestSealed(context.Background())
	if err != nil || w.Commit != s2 || len(w.After) != 1 || w.After[0].Commit != copied || fmt.Sprint(w.Changed) != "["+ledger+"]" {
		t.Fatalf("NewestSealed = %+v, %v; want %s, with the copy after it", w, err, s2)
	}
	// The seal of another branch does not verify here either.
	other := open(t, dir, sealed("k"), func(o *Options) { o.Branch = "elsewhere" })
	gitCmd(t, dir, "branch", "elsewhere", s2)
	if w, err := other.NewestSealed(context.Background()); err != nil || w.Commit != "" {
		t.Fatalf("another branch: %+v %v", w, err)
	}
}

// TestNewestSealedDeepens: a depth-1 clone whose tip is a writer's commit
// fetches history in growing steps until it finds astra's commit.
func TestNewestSealedDeepens(t *testing.T) {
	remote := newRemote(t)
	seed := cloneCLI(t, fileURL(remote), false)
	r := open(t, seed, sealed("k"))
	writeFile(t, seed, ledger, "line 1\n")
	s1, _, err := r.Commit("astra: run 1", ledger)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		gitCmd(t, seed, "commit", "-q", "--allow-empty", "-m", fmt.Sprint("edit ", i))
	}
	foreign(t, seed, "the ledger, rewritten", map[string]string{ledger: "forged, longer\n"})
	gitCmd(t, seed, "push", "-q", "origin", "main")
	defer func(steps []int) { deepenSteps = steps }(deepenSteps)
	deepenSteps = []int{3, 6, 9, math.MaxInt32} // (50, 200, 1000, all) made small

	dir := cloneCLI(t, fileURL(remote), true)
	c := open(t, dir, sealed("k"))
	w, err := c.NewestSealed(context.Background())
	if err != nil || w.Commit != s1 || len(w.After) != 7 || w.Shallow {
		t.Fatalf("NewestSealed = commit %s, %d after, shallow %v, %v", w.Commit, len(w.After), w.Shallow, err)
	}
	if fmt.Sprint(w.After[0].Changed) != "["+ledger+"]" || len(w.After[1].Changed) != 0 {
		t.Fatalf("changed: %v, %v", w.After[0].Changed, w.After[1].Changed)
	}
	// Deepened twice, to 9 commits: the boundary moved as git moves it.
	if n := gitCmd(t, dir, "rev-list", "--count", "HEAD"); n != "9" {
		t.Fatalf("history after deepening: %s commits, want 9", n)
	}
	gitCmd(t, dir, "fsck", "--no-progress")

	// Without a remote to deepen from, the walk says it stopped short.
	shallow := cloneCLI(t, fileURL(remote), true)
	gitCmd(t, shallow, "remote", "remove", "origin")
	w, err = open(t, shallow, sealed("k")).NewestSealed(context.Background())
	if err != nil || w.Commit != "" || !w.Shallow || len(w.After) != 1 {
		t.Fatalf("no remote: %+v %v", w, err)
	}
}

func TestSpillAndPushFilesSealed(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir, sealed("k"))
	ctx := context.Background()
	if err := r.PushSpill(ctx, "runner-1", map[string][]byte{"events.ndjson": []byte("{}\n"), "var/memory/x": []byte("m\n")}, "spill"); err != nil {
		t.Fatal(err)
	}
	spill := gitCmd(t, remote, "rev-parse", "refs/heads/astra/spill/runner-1")
	blob := gitCmd(t, remote, "rev-parse", spill+":var/memory/x")
	check := testSealing("k").Verify
	if err := check("astra/spill/runner-1", "", []Entry{{"var/memory/x", blob}}, gitCmd(t, remote, "log", "-1", "--format=%B", spill)); err != nil {
		t.Fatalf("spill seal: %v", err)
	}
	tip := gitCmd(t, remote, "rev-parse", "main")
	c, err := r.PushFiles(ctx, "astra-state", "", []string{"var/"}, map[string][]byte{ledger: []byte("l\n")}, "move")
	if err != nil {
		t.Fatal(err)
	}
	blob = gitCmd(t, remote, "rev-parse", c+":"+ledger)
	if err := check("astra-state", "", []Entry{{ledger, blob}}, gitCmd(t, remote, "log", "-1", "--format=%B", c)); err != nil {
		t.Fatalf("PushFiles seal: %v", err)
	}
	if err := check("astra-state", tip, []Entry{{ledger, blob}}, gitCmd(t, remote, "log", "-1", "--format=%B", c)); err == nil {
		t.Fatal("the seal verifies for another parent")
	}
}

// TestRestore puts a writer's change back and keeps what it replaced.
func TestRestoreCommitted(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r := open(t, dir, sealed("k"))
	writeFile(t, dir, ledger, "line 1\n")
	writeFile(t, dir, "var/state/snapshot", "state\n")
	s1, _, err := r.Commit("astra: run 1", ledger, "var/state/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	foreign(t, dir, "forge", map[string]string{ledger: "line 1\nforged\n", "var/state/new": "planted\n"})
	writeFile(t, dir, "var/state/snapshot", "edited, not committed\n")
	ctx := context.Background()
	w, err := r.NewestSealed(ctx)
	if err != nil || w.Commit != s1 {
		t.Fatalf("NewestSealed = %+v, %v", w, err)
	}
	paths := append(w.Changed, "var/state/snapshot")
	copies, err := r.RestoreCommitted(w.Commit, paths, "var/quarantine")
	if err != nil {
		t.Fatal(err)
	}
	q := "var/quarantine/" + s1[:12] + "/"
	if fmt.Sprint(copies) != fmt.Sprint([]string{q + ledger, q + "var/state/new", q + "var/state/snapshot"}) {
		t.Fatalf("copies %v", copies)
	}
	if readFile(t, dir, ledger) != "line 1\n" || readFile(t, dir, "var/state/snapshot") != "state\n" || readFile(t, dir, q+ledger) != "line 1\nforged\n" ||
		readFile(t, dir, q+"var/state/new") != "planted\n" || readFile(t, dir, q+"var/state/snapshot") != "edited, not committed\n" {
		t.Fatal("restore or quarantine wrong")
	}
	if _, err := os.Stat(filepath.Join(dir, "var/state/new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file the sealed commit lacks is still there")
	}
	// The index has the restored files: committing them with the copies
	// leaves a clean checkout whose sealed files are s1's again.
	if st := gitCmd(t, dir, "diff", "--cached", "--name-only"); st != ledger+"\nvar/state/new" {
		t.Fatalf("index: %q", st)
	}
	if _, _, err := r.Commit("astra: restore", append(paths, copies...)...); err != nil {
		t.Fatal(err)
	}
	assertClean(t, dir)
	if w, err = r.NewestSealed(ctx); err != nil || !w.Same() || len(w.After) != 0 || len(w.Entries) != 5 {
		t.Fatalf("after the restore: %+v %v", w, err)
	}
	// Other bytes in place of the same file are kept beside the first.
	writeFile(t, dir, ledger, "again\n")
	if copies, err := r.RestoreCommitted(s1, []string{ledger}, "var/quarantine"); err != nil || fmt.Sprint(copies) != "["+q+ledger+".1]" {
		t.Fatalf("second restore: %v %v", copies, err)
	}
}

func TestSeen(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	r := open(t, dir, sealed("k"))
	ctx := context.Background()
	if s, err := r.ReadSeen(); err != nil || s != (Seen{}) {
		t.Fatalf("nothing seen yet: %+v %v", s, err)
	}
	writeFile(t, dir, ledger, "line 1\n")
	s1, _, _ := r.Commit("astra: run 1", ledger)
	appendFile(t, dir, ledger, "line 2\n")
	s2, _, _ := r.Commit("astra: run 2", ledger)
	if err := r.Push(ctx); err != nil {
		t.Fatal(err)
	}
	seen := Seen{Commit: s2, File: ledger, Seq: 2, Hash: strings.Repeat("ab", 32)}
	if err := r.WriteSeen(seen); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadSeen(); err != nil || got != seen {
		t.Fatalf("ReadSeen = %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/astra/seen.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the lock was left")
	}
	for _, tc := range []struct {
		newest string
		behind bool
	}{{s2, false}, {s1, true}} {
		if b, err := r.Behind(ctx, seen, tc.newest); err != nil || b != tc.behind {
			t.Fatalf("Behind(%s) = %v, %v", tc.newest, b, err)
		}
	}
	// A depth-1 clone that saw s1 deepens to find it behind s2's descendant.
	for i := range 3 {
		foreign(t, dir, fmt.Sprint("later ", i), map[string]string{"notes.md": strings.Repeat("y", i+1)})
	}
	gitCmd(t, dir, "push", "-q", "origin", "main")
	shallow := cloneCLI(t, fileURL(remote), true)
	c := open(t, shallow, sealed("k"))
	if b, err := c.Behind(ctx, Seen{Commit: s1}, gitCmd(t, shallow, "rev-parse", "HEAD")); err != nil || b {
		t.Fatalf("a descendant is not behind: %v %v", b, err)
	}
}
