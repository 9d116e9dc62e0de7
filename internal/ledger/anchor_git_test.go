package ledger_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
)

// anchored reads the anchors of the branch's recent commits, as `ledger
// verify` does.
func anchored(t *testing.T, repo *gitops.Repo) []ledger.Anchor {
	t.Helper()
	msgs, err := repo.CommitMessages(50)
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Anchor
	for _, m := range msgs {
		for _, a := range ledger.ParseAnchors(m.Message) {
			a.Commit = m.Commit
			out = append(out, a)
		}
	}
	return out
}

// anchoredRuns commits three runs of three events each to a new
// repository, each commit carrying the ledger's head, and returns the
// repository, its ledger, the tail and the commits.
func anchoredRuns(t *testing.T) (string, *gitops.Repo, *ledger.Store, ledger.Tail, []string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Must(t, dir, "init", "-q", "-b", "main")
	repo, err := gitops.Open(gitops.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := ledger.Open(dir, 0)
	var tail ledger.Tail
	ts := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	var commits []string
	for run := range 3 {
		seg, _ := s.Target(tail, ts)
		var evs []*ledger.Event
		for i := range 3 {
			evs = append(evs, &ledger.Event{TS: ts, Event: ledger.RunCompleted, ScheduleID: "s", Status: ledger.StatusOK,
				IdempotencyKey: fmt.Sprintf("s@%d.%d", run, i)})
		}
		if tail, err = s.Append(tail, seg, evs); err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf("astra: run %d\n\n[skip ci]\n\n%s", run, ledger.FormatAnchors([]ledger.Anchor{tail.Anchor()}))
		h, _, err := repo.Commit(msg, seg.Path)
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, h)
	}
	return dir, repo, s, tail, commits
}

// editLine rewrites file as orig (its gzipped bytes) with one line's
// status changed, as a hand edit would.
func editLine(t *testing.T, file string, orig []byte, line int) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	raw.ReadFrom(zr)
	lines := strings.Split(strings.TrimSuffix(raw.String(), "\n"), "\n")
	lines[line-1] = strings.Replace(lines[line-1], `"status":"ok"`, `"status":"failed"`, 1)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	zw.Close()
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAnchorsInGit: commits that append to the ledger carry its head in a
// trailer; an edit of the last line, which the chain cannot see, is found
// against it and named with the commit; an earlier edit is still the
// chain's to find; a clean ledger passes.
func TestAnchorsInGit(t *testing.T) {
	dir, repo, s, tail, commits := anchoredRuns(t)
	// git reads the anchors as trailers.
	if got := gittest.Must(t, dir, "log", "-1", "--format=%(trailers:key=Ledger-Head,valueonly)"); got != fmt.Sprintf("%s %d %s", tail.Segment.Path, tail.Seq, tail.Hash) {
		t.Fatalf("git trailer = %q", got)
	}

	verifyClean(t, dir, s, repo)

	file := filepath.Join(dir, filepath.FromSlash(tail.Segment.Path))
	orig, _ := os.ReadFile(file)

	// The last line: the chain holds, the anchor does not.
	editLine(t, file, orig, 9)
	segs, _ := s.Segments()
	if _, err := ledger.Verify(dir, segs); err != nil {
		t.Fatalf("the chain cannot see an edit of the last line, yet: %v", err)
	}
	err := s.VerifyAnchors(segs, anchored(t, repo))
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || ce.File != tail.Segment.Path || ce.Line != 9 || ce.Kind != ledger.ProblemAnchor ||
		ce.Commit != commits[2] || !strings.Contains(ce.Error(), "changed after it was committed in "+commits[2][:12]) {
		t.Fatalf("edit of the last line: %v", err)
	}

	// An earlier line: the chain names it.
	editLine(t, file, orig, 4)
	segs, _ = s.Segments()
	if _, err := ledger.Verify(dir, segs); !errors.As(err, &ce) || ce.Line != 4 || ce.Kind != ledger.ProblemChain {
		t.Fatalf("edit of line 4: %v", err)
	}

	// Restored from git, it is clean again.
	gittest.Must(t, dir, "checkout", "--", tail.Segment.Path)
	verifyClean(t, dir, s, repo)
}

// verifyClean: the ledger's chain and its anchors in repo both hold.
func verifyClean(t *testing.T, dir string, s *ledger.Store, repo *gitops.Repo) {
	t.Helper()
	segs, _ := s.Segments()
	if _, err := ledger.Verify(dir, segs); err != nil {
		t.Fatal(err)
	}
	if err := s.VerifyAnchors(segs, anchored(t, repo)); err != nil {
		t.Fatalf("a clean ledger: %v", err)
	}
}
