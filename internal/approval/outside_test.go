package approval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/repofs"
)

// TestTokenOutsideRefused: a token that is a symlink out of the repository
// is neither read (its content never reaches the error) nor written through.
func TestTokenOutsideRefused(t *testing.T) {
	base := t.TempDir()
	repo, secret := filepath.Join(base, "repo"), filepath.Join(base, "secret")
	if err := os.WriteFile(secret, []byte(`{"schedule_id":"AKIAIOSFODNN7EXAMPLE"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(repo, filepath.FromSlash(Path("deploy")))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	raw, err := Read(repo, "deploy")
	if !errors.Is(err, repofs.ErrLink) || raw != nil || strings.Contains(err.Error(), "AKIA") || strings.Contains(err.Error(), base) {
		t.Fatalf("read through a link out: %v %q", err, raw)
	}
	if _, err := Write(repo, token()); !errors.Is(err, repofs.ErrLink) {
		t.Fatalf("wrote through a link out: %v", err)
	}
	if b, _ := os.ReadFile(secret); !strings.Contains(string(b), "AKIA") {
		t.Fatal("the file outside changed")
	}
}

// TestPending: the listing names every <id>.token entry (a link among
// them, which Read then refuses).
func TestPending(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	if ids, err := Pending(repo); err != nil || len(ids) != 0 {
		t.Fatalf("no pending directory: %v %v", ids, err)
	}
	dir := filepath.Join(repo, filepath.FromSlash(Dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.token", "C.token", "README.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(dir, "b.token")); err != nil {
		t.Fatal(err)
	}
	ids, err := Pending(repo)
	if err != nil || len(ids) != 3 || !ids["a"] || !ids["b"] || !ids["c"] {
		t.Fatalf("pending: %v %v", ids, err)
	}
}

// TestPendingOutside: a pending directory that leads out of the
// repository is refused, not listed.
func TestPendingOutside(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	dir := filepath.Join(repo, filepath.FromSlash(Dir))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "out"), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Pending(repo); !errors.Is(err, repofs.ErrLink) {
		t.Fatalf("listed a directory outside the repository: %v", err)
	}
}
