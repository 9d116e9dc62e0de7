package gitops

import (
	"fmt"
	"path/filepath"

	git "github.com/go-git/go-git/v5"
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
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return "", fmt.Errorf("open %s: %w", abs, err)
	}
	cfg, err := repo.ConfigScoped(config.SystemScope)
	if err != nil {
		return "", err
	}
	return cfg.User.Email, nil
}
