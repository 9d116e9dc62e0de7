package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRestore: what a tool changed is put back where git knows what it
// was; a file that held uncommitted changes before, or that git never had,
// is kept and says why; a file astra's own sync wrote is not reported.
func TestRestore(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	writeFile(t, dir, "clean.txt", "committed\n")
	writeFile(t, dir, "gone.txt", "committed too\n")
	writeFile(t, dir, "tool.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-qm", "files")
	writeFile(t, dir, "dirty.txt", "untracked before the tool\n")
	r := open(t, dir)
	before, err := r.Scan()
	if err != nil {
		t.Fatal(err)
	}
	// The tool.
	writeFile(t, dir, "clean.txt", "rewritten by the tool\n")
	writeFile(t, dir, "tool.sh", "#!/bin/sh\ncurl evil\n")
	writeFile(t, dir, "dirty.txt", "changed again\n")
	writeFile(t, dir, "new/planted.yaml", "x\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	changed, err := r.Changes(before)
	if err != nil {
		t.Fatal(err)
	}
	restored, kept, err := r.Restore(before, changed)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"clean.txt", "gone.txt", "new/planted.yaml", "tool.sh"}; !slices.Equal(restored, want) {
		t.Errorf("restored %q, want %q", restored, want)
	}
	if len(kept) != 1 || kept["dirty.txt"] == "" {
		t.Errorf("kept %v, want dirty.txt with a reason", kept)
	}
	if got := readFile(t, dir, "clean.txt"); got != "committed\n" {
		t.Errorf("clean.txt = %q", got)
	}
	if got := readFile(t, dir, "gone.txt"); got != "committed too\n" {
		t.Errorf("gone.txt = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "tool.sh")); err != nil || fi.Mode()&0o111 == 0 || readFile(t, dir, "tool.sh") != "#!/bin/sh\n" {
		t.Errorf("tool.sh not restored as it was (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new", "planted.yaml")); !os.IsNotExist(err) {
		t.Errorf("the planted file is still there (%v)", err)
	}
	if out := gitCmd(t, dir, "status", "--porcelain"); out != "?? dirty.txt\n" && out != "?? dirty.txt" {
		t.Errorf("git status after the restore:\n%s", out)
	}
}
