package gitops

import (
	"bytes"
	"fmt"
	"os/exec"
)

// SetConfig sets key to value in the configuration of the repository at
// dir, with `git config`: git writes its own file, which go-git would
// rewrite whole.
func SetConfig(dir, key, value string) error {
	out, err := exec.Command("git", "-C", dir, "config", key, value).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git config %s: %w: %s", key, err, bytes.TrimSpace(out))
	}
	return nil
}
