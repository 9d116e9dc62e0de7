package ledger

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadAfter: the events appended after a version of a file, read
// from that version's length; a cut member is reported, not skipped.
func TestReadAfter(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tail := appendN(t, s, Tail{}, now, 3)
	pushed := tail.Segment.Size
	tail = appendN(t, s, tail, now, 2)
	tail = appendN(t, s, tail, now, 1)
	got, err := ReadAfter(root, tail.Segment, pushed)
	if err != nil || len(got) != 3 || got[0].Seq != 4 || got[2].Seq != 6 {
		t.Fatalf("ReadAfter = %d events, %v", len(got), err)
	}
	if got, err := ReadAfter(root, tail.Segment, tail.Segment.Size); err != nil || len(got) != 0 {
		t.Fatalf("nothing after the end: %d, %v", len(got), err)
	}
	if err := os.Truncate(filepath.Join(root, filepath.FromSlash(tail.Segment.Path)), tail.Segment.Size-5); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAfter(root, tail.Segment, pushed); err == nil {
		t.Fatal("a cut member was read")
	}
}
