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
