package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/go-git/go-billy/v5/osfs"
)

// A checkout made to fetch little (actions/checkout with `filter:
// blob:none` and `sparse-checkout`) is a partial clone, which leaves file
// contents out until they are needed, with a sparse checkout, which leaves
// files out of the worktree. git marks such a repository with extensions
// go-git does not know and refuses to open it with. astra can work in it:
// it reads and writes objects and refs itself and touches only the worktree
// files it is given or that changed, so the extensions change nothing for
// it, as long as it never needs a file the checkout left out (leftOut).

// tolerated are the extensions such checkouts turn on (lower case, as
// git's config keys compare): objects that may be missing locally, and
// config per worktree (where the sparse-checkout switch lives).
var tolerated = map[string]bool{"partialclone": true, "worktreeconfig": true}

// plainOpen opens the repository whose worktree root is dir, as
// PlainOpen does, and a partial clone or a sparse checkout too: go-git
// refuses their extensions as unknown (repository format 1) or as not
// allowed in format 0, where git keeps worktreeConfig (`git
// sparse-checkout set --no-cone` sets it without raising the format).
func plainOpen(dir string) (*git.Repository, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrUnknownExtension) || errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion) {
		return openTolerant(dir)
	}
	return repo, err
}

// openTolerant opens the repository at dir as PlainOpen does, hiding the
// tolerated extensions from go-git's check. Any other unknown extension is
// still refused.
func openTolerant(dir string) (*git.Repository, error) {
	gitDir, commonDir, err := gitDirs(dir)
	if err != nil {
		return nil, err
	}
	dot := osfs.New(gitDir)
	if commonDir != gitDir {
		dot = dotgit.NewRepositoryFilesystem(dot, osfs.New(commonDir))
	}
	return git.Open(tolerant{filesystem.NewStorage(dot, cache.NewObjectLRUDefault())}, osfs.New(dir))
}

// tolerant is a storage whose config does not show the tolerated
// extensions. astra never writes the repository's config.
type tolerant struct{ *filesystem.Storage }

func (t tolerant) Config() (*config.Config, error) {
	cfg, err := t.Storage.Config()
	if err != nil || !cfg.Raw.HasSection("extensions") {
		return cfg, err
	}
	s := cfg.Raw.Section("extensions")
	for _, o := range s.Options {
		if tolerated[strings.ToLower(o.Key)] {
			s.RemoveOption(o.Key)
		}
	}
	if len(s.Options) == 0 {
		cfg.Raw.RemoveSection("extensions")
	}
	return cfg, nil
}

func (t tolerant) SetConfig(*config.Config) error {
	return errors.New("astra does not change the repository's git config")
}

// leftOut reports whether the checkout left path out on purpose: the file
// is not in the worktree and git has only its name (a partial clone did
// not fetch its content), as for ledger files a sparse checkout of a run
// does not need. Such files are left as they are: neither compared,
// written nor counted as local changes.
func (r *Repo) leftOut(path string, e *object.TreeEntry) bool {
	if e == nil {
		return false
	}
	if _, err := os.Lstat(r.fsPath(path)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return !r.hasObject(e.Hash)
}

func (r *Repo) hasObject(h plumbing.Hash) bool { return r.st.HasEncodedObject(h) == nil }

// Widen brings what a sparse checkout left out of pattern (a non-cone
// pattern, as astra init's workflow sets them) into the worktree, with
// `git sparse-checkout add`; a cone-mode checkout, which takes whole
// directories only, gets dir. In a partial clone only git itself can fetch
// the contents left out, and a checkout can only be sparse by git's doing,
// so git is there. It fails on a checkout that is not sparse.
func (r *Repo) Widen(ctx context.Context, dir, pattern string) error {
	err := r.sparseAdd(ctx, pattern)
	if err != nil && strings.Contains(err.Error(), "specify directories") {
		err = r.sparseAdd(ctx, dir)
	}
	return err
}

func (r *Repo) sparseAdd(ctx context.Context, arg string) error {
	cmd := exec.CommandContext(ctx, "git", "sparse-checkout", "add", arg)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C") // Widen reads git's message
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git sparse-checkout add %s: %w: %s", arg, err, bytes.TrimSpace(out))
	}
	return nil
}
