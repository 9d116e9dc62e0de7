package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoose: the estimate samples objects/17 as git gc --auto does, leaves
// temporary files out, and counts every directory before it says the
// repository is past git's bounds.
func TestLoose(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Loose(); l.TooLoose() {
		t.Fatalf("a fresh clone is too loose: %+v", l)
	}
	objects := filepath.Join(dir, ".git", "objects")
	plant := func(sub, name string, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(objects, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(objects, sub, name), make([]byte, size), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	// Two large blobs that happen to land in the sampled directory.
	plant("17", strings.Repeat("a", 38), 4<<20)
	plant("17", strings.Repeat("b", 38), 4<<20)
	plant("17", "tmp_obj_123", 4<<20)
	if l := r.Loose(); l.TooLoose() || l.Bytes < 8<<20 {
		t.Fatalf("two loose blobs: %+v", l)
	}
	// Many small objects everywhere: past git's gc.auto.
	for i := range 256 {
		for k := range 27 {
			plant(fmt.Sprintf("%02x", i), fmt.Sprintf("%038d", k), 10)
		}
	}
	if l := r.Loose(); !l.TooLoose() || l.Objects < 256*27 {
		t.Fatalf("%d loose objects: %+v", 256*27, l)
	}
}
