package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tracking ref a go-git fetch killed halfway left empty is removed when
// the repository is opened (said in the warnings), and the next sync
// writes it again; fetches write tracking refs by lock and rename, so
// the file is replaced, never truncated in place.
func TestTrackingRefByRename(t *testing.T) {
	remote := newRemote(t)
	dir := cloneCLI(t, fileURL(remote), false)
	ref := filepath.Join(dir, ".git", "refs", "remotes", "origin", "main")
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := open(t, dir)
	if ws := r.Warnings(); len(ws) != 1 || !strings.Contains(ws[0], "removed refs/remotes/origin/main, an empty ref") {
		t.Fatalf("warnings %q", ws)
	}
	if _, _, err := r.Unpushed(); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := cloneCLI(t, fileURL(remote), false)
	var before os.FileInfo
	for i, name := range []string{"one.txt", "two.txt"} {
		tip := foreign(t, other, name, map[string]string{name: "x\n"})
		gitCmd(t, other, "push", "-q", "origin", "main")
		if err := r.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(readFile(t, dir, ".git/refs/remotes/origin/main")); got != tip {
			t.Fatalf("tracking ref %q, want %s", got, tip)
		}
		fi, err := os.Stat(ref)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && os.SameFile(fi, before) {
			t.Fatal("the fetch rewrote the tracking ref in place: a kill in between leaves it empty")
		}
		before = fi
	}
}
