package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func write(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSubtrees: the view is the largest subtrees that hold no denied
// path; a directory holding one is entered, symlinks are never taken.
func TestSubtrees(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a/deny": "", "a/keep": "", "a/sub/x": "", "b/y": "", "top": ""})
	if err := os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range subtrees(root, []string{filepath.Join(root, "a", "deny")}) {
		rel, _ := filepath.Rel(root, r.Path)
		if r.Dir {
			rel += "/"
		}
		got = append(got, rel)
	}
	slices.Sort(got)
	if want := []string{"a/keep", "a/sub/", "b/", "top"}; !slices.Equal(got, want) {
		t.Fatalf("subtrees = %q, want %q", got, want)
	}
	if got := subtrees(root, []string{root}); len(got) != 0 {
		t.Fatalf("a denied root gives %v", got)
	}
}

// TestResolveProtectsBothNames: a protected path that is a symlink inside
// the repository is protected where it leads too.
func TestResolveProtectsBothNames(t *testing.T) {
	repo, _ := filepath.EvalSymlinks(t.TempDir())
	write(t, repo, map[string]string{".git/config": "", "config/schedules/s.yaml": "", "src/x": ""})
	if err := os.Symlink("config/schedules", filepath.Join(repo, "schedules")); err != nil {
		t.Fatal(err)
	}
	v, err := (&Policy{Repo: repo, WriteRepo: true, Protected: []string{"schedules"}}).resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Write {
		if r.Path == repo || r.Path == filepath.Join(repo, "config") || r.Path == filepath.Join(repo, "config", "schedules") || r.Path == filepath.Join(repo, ".git") {
			t.Errorf("%s is writable", r.Path)
		}
	}
	for _, r := range v.Read {
		if r.Path == filepath.Join(repo, ".git") || r.Path == repo || r.Path == "/" {
			t.Errorf("%s is readable as a whole, .git/config with it", r.Path)
		}
	}
}
