//go:build unix

package repofs

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// TestHelperFullDisk is not a test: TestWriteFileOnAFullDisk runs the test
// binary with this one selected, under a file size limit that makes writes
// fail as a full disk does.
func TestHelperFullDisk(t *testing.T) {
	dir := os.Getenv("REPOFS_FULL_DISK_DIR")
	if dir == "" {
		t.Skip("the writer of TestWriteFileOnAFullDisk")
	}
	signal.Ignore(syscall.SIGXFSZ) // the write fails with EFBIG instead
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1024, Max: 1024}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, "var/state/snapshot", bytes.Repeat([]byte("x"), 64<<10)); err == nil {
		t.Fatal("a write past the limit succeeded")
	}
}

// TestWriteFileOnAFullDisk: a write that fails halfway leaves neither the
// file nor its temporary behind (a 0-byte var/state/snapshot.tmp used to
// stay, for a later commit to pick up).
func TestWriteFileOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFullDisk$")
	cmd.Env = append(os.Environ(), "REPOFS_FULL_DISK_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "var", "state", "*"))
	if len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}
