package ledger

import (
	"errors"
	"os"
	"path/filepath"
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
