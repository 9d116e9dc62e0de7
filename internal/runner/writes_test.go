package runner

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeepWritesLeavesTheListAlone: keeping the declared writes across a
// resync and putting them back, round after round, leaves the list of
// writes to commit as it was: no path blanked, none twice. dedupe used to
// sort and compact the session's own list in place, so a second race
// round committed the path "".
func TestKeepWritesLeavesTheListAlone(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"b/out.txt", "a/out.txt"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &session{r: &Runner{opts: Options{Root: root}}}
	s.writes.add("b/out.txt", "a/out.txt", "b/out.txt")
	want := []string{"b/out.txt", "a/out.txt"}
	for round := range 3 {
		kept, err := s.keepWrites()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.putWrites(kept); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.writes.files, want) {
			t.Fatalf("round %d: writes to commit %q, want %q", round+1, s.writes.files, want)
		}
	}
	if got := dedupe(s.writes.files); !slices.Equal(got, []string{"a/out.txt", "b/out.txt"}) || !slices.Equal(s.writes.files, want) {
		t.Fatalf("dedupe = %q and left %q", got, s.writes.files)
	}
}
