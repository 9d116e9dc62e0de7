package gitops

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestEditIndexRoundTrip checks the raw editor against go-git's decoder,
// including a name longer than the 12-bit length field.
func TestEditIndexRoundTrip(t *testing.T) {
	long := strings.Repeat("d/", 2100) + "f"
	mk := func(name string, n byte) *index.Entry {
		return &index.Entry{Name: name, Hash: plumbing.Hash{n}, Mode: filemode.Regular, Size: uint32(n),
			ModifiedAt: time.Unix(1700000000, int64(n)), CreatedAt: time.Unix(1700000000, 0)}
	}
	var buf bytes.Buffer
	in := &index.Index{Version: 2, Entries: []*index.Entry{mk("a", 1), mk("b/x", 2), mk("b/y", 3), mk(long, 4), mk("z", 5)}}
	if err := index.NewEncoder(&buf).Encode(in); err != nil {
		t.Fatal(err)
	}
	drop := func(name string) bool { return name == "b/x" || name == "z" }
	out, err := editIndex(buf.Bytes(), drop, []*index.Entry{mk("b/w", 6), mk("c", 7), mk("zz", 8)})
	if err != nil {
		t.Fatal(err)
	}
	got := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(out)).Decode(got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got.Entries {
		names = append(names, e.Name)
		if e.Name == "c" && (e.Hash != plumbing.Hash{7} || e.Size != 7 || e.ModifiedAt.Nanosecond() != 7) {
			t.Fatalf("added entry decoded as %+v", e)
		}
	}
	want := []string{"a", "b/w", "b/y", "c", long, "zz"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("entries = %.80q, want %.80q", names, want)
	}

	bad := append([]byte(nil), buf.Bytes()...)
	bad[20] ^= 1
	if _, err := editIndex(bad, drop, nil); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt index: %v", err)
	}
}

// TestCommitKeepsOtherIndexEntries: flags the raw editor copies byte for
// byte (assume-unchanged, intent-to-add in a version 3 index) survive.
func TestCommitKeepsOtherIndexEntries(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	gitCmd(t, dir, "update-index", "--assume-unchanged", "README.md")
	writeFile(t, dir, "notes/ita.txt", "later\n")
	gitCmd(t, dir, "add", "-N", "notes/ita.txt")
	r := open(t, dir)
	writeFile(t, dir, ledger, "l\n")
	if _, _, err := r.Commit("l", ledger); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "ls-files", "-v", "README.md"); got != "h README.md" {
		t.Fatalf("assume-unchanged lost: %q", got)
	}
	if got := gitCmd(t, dir, "status", "--porcelain"); got != "A notes/ita.txt" {
		t.Fatalf("git status = %q, want only the intent-to-add file", got)
	}
	if out := gitCmd(t, dir, "diff-files", "--name-only", "--", ledger); out != "" {
		t.Fatalf("ledger entry stale: %q", out)
	}
}

// TestCommitIndexV4 covers the go-git codec fallback.
func TestCommitIndexV4(t *testing.T) {
	dir := cloneCLI(t, fileURL(newRemote(t)), false)
	gitCmd(t, dir, "update-index", "--index-version", "4")
	r := open(t, dir)
	writeFile(t, dir, ledger, "l\n")
	if _, _, err := r.Commit("l", ledger); err != nil {
		t.Fatal(err)
	}
	assertClean(t, dir)
}
