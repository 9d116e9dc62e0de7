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

// SigningKey is the SSH key git signs commits with for the repository at
// dir: user.signingkey when gpg.format is ssh (a key file, or a literal
// public key), "" otherwise.
func SigningKey(dir string) string {
	get := func(key string) string {
		out, err := exec.Command("git", "-C", dir, "config", "--get", key).Output()
		if err != nil {
			return ""
		}
		return string(bytes.TrimSpace(out))
	}
	if get("gpg.format") != "ssh" {
		return ""
	}
	return get("user.signingkey")
}
