//go:build unix

package repofs

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFIFO: a named pipe inside the repository is refused without opening
// it (opening a FIFO for reading blocks until a writer comes).
func TestFIFO(t *testing.T) {
	repo := t.TempDir()
	must(t, syscall.Mkfifo(filepath.Join(repo, "p.yaml"), 0o644))
	if _, err := ReadFile(repo, "p.yaml", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("got %v", err)
	}
}
