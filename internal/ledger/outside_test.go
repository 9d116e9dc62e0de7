package ledger

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/repofs"
)

// TestLedgerOutsideRefused: a ledger directory or segment that is a
// symlink out of the repository is neither listed, read nor appended to.
func TestLedgerOutsideRefused(t *testing.T) {
	base := t.TempDir()
	repo, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(repo, "var"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(repo, Dir)); err != nil {
		t.Fatal(err)
	}
	s := Open(repo, 0)
	if _, err := s.Segments(); !errors.Is(err, repofs.ErrLink) {
		t.Fatalf("listed a directory outside: %v", err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	seg, _ := s.Target(Tail{}, now)
	if _, err := s.Append(Tail{}, seg, []*Event{{Event: ScheduleCreated, ScheduleID: "a", TS: now}}); !errors.Is(err, repofs.ErrLink) {
		t.Fatalf("appended outside: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the repository: %v", entries)
	}
	if _, err := First(repo, Segment{Path: seg.Path}); !errors.Is(err, repofs.ErrLink) {
		t.Fatalf("read outside: %v", err)
	}
}

// TestGzipBombRefused: a segment that inflates to one line far longer than
// astra ever writes (a gzip bomb in a pull request) is refused at MaxLine,
// by every reader, and Append refuses to write such a line.
func TestGzipBombRefused(t *testing.T) {
	repo := t.TempDir()
	s := Open(repo, 0)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	seg, _ := s.Target(Tail{}, now)
	tail, err := s.Append(Tail{}, seg, []*Event{{Event: ScheduleCreated, ScheduleID: "a", TS: now}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(tail, tail.Segment, []*Event{{Event: RunCompleted, ScheduleID: "a", TS: now, Output: strings.Repeat("x", MaxLine)}}); err == nil ||
		!strings.Contains(err.Error(), "longer than a ledger line may be") {
		t.Fatalf("appended a line past MaxLine: %v", err)
	}
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte{'{'}, 3*MaxLine))
	zw.Close()
	f, err := os.OpenFile(filepath.Join(repo, tail.Segment.Path), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bomb.Bytes())
	f.Close()
	segs, _ := s.Segments()
	_, err = Verify(repo, segs)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(ce.Msg, "longer than") {
		t.Fatalf("verify: %v", err)
	}
	bombOnly := filepath.Join(Dir, "2026-12.ndjson.gz")
	os.WriteFile(filepath.Join(repo, bombOnly), bomb.Bytes(), 0o644)
	if _, err := First(repo, Segment{Path: bombOnly}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("first: %v", err)
	}
}
