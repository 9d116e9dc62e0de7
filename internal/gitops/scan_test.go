package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestScanChanges: a second scan names exactly the files added, changed
// (even within the same file-time tick, at the same size) and removed,
// leaving out what git ignores, .git and the skipped prefixes.
func TestScanChanges(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	writeFile(t, dir, ".gitignore", "*.log\nbuild/\n")
	writeFile(t, dir, "sub/.gitignore", "local.txt\n")
	writeFile(t, dir, "keep.txt", "same\n")
	writeFile(t, dir, "old.txt", "old\n")
	writeFile(t, dir, "gone.txt", "bye\n")
	// Written just now: a rewrite of the same size in the same tick must
	// still be seen.
	fresh := filepath.Join(dir, "fresh.txt")
	if err := os.WriteFile(fresh, []byte("aaaa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	before, err := r.Scan("var/schedules/")
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(fresh)
	if err := os.WriteFile(fresh, []byte("bbbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(fresh, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "old.txt", "new content\n")
	writeFile(t, dir, "reports/2026/a.md", "# a\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "debug.log", "ignored\n")
	writeFile(t, dir, "build/out.bin", "ignored\n")
	writeFile(t, dir, "sub/local.txt", "ignored below sub/\n")
	writeFile(t, dir, "var/schedules/2026-11.ndjson.gz", "astra's own\n")
	if err := os.Chtimes(filepath.Join(dir, "keep.txt"), time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Changes(before, "var/schedules/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fresh.txt", "gone.txt", "keep.txt", "old.txt", "reports/2026/a.md"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if got, _ := r.Changes(before, "var/schedules/"); !slices.Equal(got, want) {
		t.Fatalf("a second look differs: %q", got)
	}
}

// BenchmarkScan: one scan of a checkout of 5,000 files, what watching a
// tool costs before and after it runs.
func BenchmarkScan(b *testing.B) {
	dir := cloneCLI(b, fileURL(newRemote(b)), false)
	for i := range 5000 {
		writeFile(b, dir, filepath.Join("src", string(rune('a'+i%20)), "f"+time.Duration(i).String()+".txt"), "content\n")
	}
	r := open(b, dir)
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Scan("var/schedules/"); err != nil {
			b.Fatal(err)
		}
	}
}
