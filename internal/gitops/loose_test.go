package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoose: the estimate samples objects/17 as git gc --auto does, and
// leaves temporary files out.
func TestLoose(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Loose(); l.TooLoose() {
		t.Fatalf("a fresh clone is too loose: %+v", l)
	}
	sample := filepath.Join(dir, ".git", "objects", "17")
	if err := os.MkdirAll(sample, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{strings.Repeat("a", 38), strings.Repeat("b", 38), "tmp_obj_123"} {
		if err := os.WriteFile(filepath.Join(sample, name), make([]byte, 4<<20), 0o444); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	l := r.Loose()
	if l.Objects != 512 || l.Bytes != 512*4<<20 || !l.TooLoose() {
		t.Fatalf("estimate %+v, want 512 objects of 4 MiB, too loose", l)
	}
}
