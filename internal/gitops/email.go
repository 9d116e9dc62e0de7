package gitops

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/config"
)

// UserEmail is user.email as git config gives it for the repository at
// dir (local, then global, then system configuration): who a person
// running astra locally says they are.
func UserEmail(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	repo, err := plainOpen(topLevel(abs))
	if err != nil {
		return "", fmt.Errorf("open %s: %w", abs, err)
	}
	cfg, err := repo.ConfigScoped(config.SystemScope)
	if err != nil {
		return "", err
	}
	return cfg.User.Email, nil
}

// topLevel is the nearest directory at or above dir holding .git (dir
// itself when there is none: opening it then says so).
func topLevel(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
