package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/posture"
	"github.com/astra-gitops/astra/internal/scaffold"
	"github.com/astra-gitops/astra/internal/seal"
)

// ledgerKey is a ledger key astra init generated: its public half goes to
// the policies, its private half to a file outside the repository.
type ledgerKey struct {
	private []byte
	public  seal.PublicKey
	path    string // where the private half is written
	env     string // the GitHub environment whose secret it becomes
}

// newLedgerKey generates a key for init unless the policies name one
// already (nil then, with a note when they have a trust: section that
// lists none), and says which environment the workflows name. keyFile is
// --key-file, "" for the default place.
func (a *app) newLedgerKey(keyFile string) (k *ledgerKey, env, note string, err error) {
	env = model.DefaultEnvironment
	if cfg, diags, err := config.Load(a.repo()); err == nil && diags.Errors() == 0 {
		trust := cfg.Policies.Trust
		env = trust.EnvironmentName()
		switch {
		case trust.Keyed():
			return nil, env, "", nil
		case trust.Meta.Pos.File != "":
			return nil, env, fmt.Sprintf("%s has a trust: section without ledger_keys: add the public half of a key there "+
				"(ssh-keygen -t ed25519 -N '' -f <file outside the repository>), and store the private half with gh secret set %s --env %s",
				trust.Meta.Pos.File, posture.KeyEnv, env), nil
		}
	}
	slug := a.repoSlug()
	priv, pub, err := seal.Generate("astra ledger key " + slug)
	if err != nil {
		return nil, env, "", err
	}
	k = &ledgerKey{private: priv, public: pub, path: keyFile, env: env}
	if k.path == "" {
		dir := a.getenv("XDG_CONFIG_HOME")
		if dir == "" {
			if dir, err = os.UserConfigDir(); err != nil {
				return nil, env, "", errkind.Usagef("no place for the ledger key's private half (%v): name one with --key-file", err)
			}
		}
		fp := strings.NewReplacer("/", "_", "+", "-").Replace(strings.TrimPrefix(pub.Fingerprint(), "SHA256:"))
		k.path = filepath.Join(dir, "astra", "keys", fmt.Sprintf("%s-%s.key", strings.ReplaceAll(slug, "/", "-"), fp[:8]))
	}
	if k.path, err = filepath.Abs(k.path); err != nil {
		return nil, env, "", errkind.Usage(err)
	}
	if inside(a.repo(), k.path) {
		return nil, env, "", errkind.Usagef("--key-file %s is inside the repository: whoever can read the repository would hold the ledger key; choose a path outside it", k.path)
	}
	return k, env, "", nil
}

// inside reports whether path is within root (symbolic links resolved
// as far as they exist).
func inside(root, path string) bool {
	resolve := func(p string) string {
		for dir, rest := p, ""; ; {
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				return filepath.Join(r, rest)
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return p
			}
			rest = filepath.Join(filepath.Base(dir), rest)
			dir = parent
		}
	}
	rel, err := filepath.Rel(resolve(root), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// write stores the private half, readable by its owner only, never over
// an existing file.
func (k *ledgerKey) write() error {
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return errkind.Usagef("the ledger key's private half: %w (name another place with --key-file)", err)
	}
	f, err := os.OpenFile(k.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return errkind.Usagef("%s exists: astra init does not overwrite a key (name another file with --key-file)", k.path)
	}
	if err != nil {
		return errkind.Usagef("the ledger key's private half: %w (name another place with --key-file)", err)
	}
	if _, err := f.Write(k.private); err != nil {
		f.Close()
		return errkind.Usage(err)
	}
	return errkind.Usage(f.Close())
}

var githubRemoteRE = regexp.MustCompile(`github\.com[:/]([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$`)

// repoSlug is "owner/repo": GITHUB_REPOSITORY, else the origin remote's
// GitHub URL, else the directory's name.
func (a *app) repoSlug() string {
	if r := a.getenv("GITHUB_REPOSITORY"); r != "" {
		return r
	}
	if out, err := exec.Command("git", "-C", a.repo(), "remote", "get-url", "origin").Output(); err == nil {
		if m := githubRemoteRE.FindStringSubmatch(strings.TrimSpace(string(out))); m != nil {
			return m[1] + "/" + m[2]
		}
	}
	return filepath.Base(a.repo())
}

// currentBranch is the checked-out branch, the default branch of a fresh
// clone; "main" when git cannot say.
func (a *app) currentBranch() string {
	if out, err := exec.Command("git", "-C", a.repo(), "symbolic-ref", "--short", "HEAD").Output(); err == nil {
		if b := strings.TrimSpace(string(out)); b != "" {
			return b
		}
	}
	return "main"
}

// printSetup says where the key went and the commands that set GitHub up
// as docs/security.md's documented setup has it.
func (a *app) printSetup(w io.Writer, k *ledgerKey, dryRun bool) {
	repo := a.getenv("GITHUB_REPOSITORY")
	if k != nil {
		if dryRun {
			fmt.Fprintf(w, "\nwould generate a ledger key: the private half in %s, the public half in %s\n", k.path, scaffold.TrustFile)
			return
		}
		fmt.Fprintf(w, "\nLedger key %s: the private half is in %s (keep it out of the repository: whoever holds it can rewrite the ledger),\n"+
			"the public half in %s.\n", k.public.Fingerprint(), k.path, scaffold.TrustFile)
		fmt.Fprintf(w, "Give it to the default branch's cron job only, in a GitHub environment restricted to that branch:\n  %s\n  gh secret set %s --env %s < %s\n",
			posture.EnvironmentCommands(repo, k.env, a.currentBranch()), posture.KeyEnv, k.env, shellQuote(k.path))
	}
	if dryRun {
		return
	}
	ledger := a.v.GetString("ledger_branch")
	fmt.Fprintln(w, "Protect the default branch (pull requests with a code owner's review, no force pushes, no deletion):")
	fmt.Fprintf(w, "  %s\n", posture.DefaultRuleset(repo))
	if ledger == "" {
		ledger = "astra-state"
		fmt.Fprintln(w, "Keep the ledger on its own branch (add `ledger_branch: astra-state` to .astra.yaml), where no one can rewind or delete it:")
	} else {
		fmt.Fprintf(w, "Keep anyone from rewinding or deleting the ledger branch %s:\n", ledger)
	}
	fmt.Fprintf(w, "  %s\n", posture.LedgerRuleset(repo, ledger))
	fmt.Fprintln(w, "Then check the setup (tier-2 tools run only once it passes): GITHUB_TOKEN=$(gh auth token) astra doctor")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
