package gitops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserEmail reads user.email from a real repository's configuration,
// the repository's own value winning over the global one.
func TestUserEmail(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(git, append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if got, err := UserEmail(repo); got != "" || err != nil {
		t.Errorf("no email configured: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\temail = global@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := UserEmail(filepath.Join(repo)); got != "global@example.com" {
		t.Errorf("global email = %q", got)
	}
	run("config", "user.email", "local@example.com")
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, _ := UserEmail(filepath.Join(repo, "sub")); got != "local@example.com" {
		t.Errorf("local email = %q", got)
	}
	if _, err := UserEmail(t.TempDir()); err == nil {
		t.Error("outside a repository: no error")
	}
}

func TestSetConfig(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	if err := SetConfig(dir, "diff.astra-ledger.textconv", "astra ledger cat"); err != nil {
		t.Fatal(err)
	}
	if got := gitCmd(t, dir, "config", "diff.astra-ledger.textconv"); strings.TrimSpace(got) != "astra ledger cat" {
		t.Fatalf("config = %q", got)
	}
	if err := SetConfig(t.TempDir(), "diff.x.textconv", "y"); err == nil || !strings.Contains(err.Error(), "git config diff.x.textconv") {
		t.Fatalf("outside a repository: %v", err)
	}
}
