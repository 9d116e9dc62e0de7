package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// remote is the configured remote, fetching into refs written as setRef
// writes them. go-git's fetch writes a remote-tracking ref by truncating
// the file and then writing it: a run killed in between left an empty
// refs/remotes/origin/<branch>, and every later run failed on "ref file
// is empty" before it could fetch again.
func (r *Repo) remote() (*git.Remote, error) {
	rem, err := r.repo.Remote(r.opts.Remote)
	if err != nil {
		return nil, r.fail(ErrNoRemote, "remote "+r.opts.Remote, err, "")
	}
	refs := lockedRefs{Storer: r.st, r: r}
	if pw, ok := r.st.(storer.PackfileWriter); ok {
		// Keep the fetched pack a pack: without it go-git writes every
		// object loose.
		return git.NewRemote(packedLockedRefs{refs, pw}, rem.Config()), nil
	}
	return git.NewRemote(refs, rem.Config()), nil
}

type packedLockedRefs struct {
	lockedRefs
	storer.PackfileWriter
}

// lockedRefs is the repository's storage with the refs a fetch writes
// going through setRef (<ref>.lock, then a rename).
type lockedRefs struct {
	storage.Storer
	r *Repo
}

func (l lockedRefs) SetReference(ref *plumbing.Reference) error {
	if ref.Type() != plumbing.HashReference {
		return l.Storer.SetReference(ref)
	}
	return l.r.setRef(ref.Name(), ref.Hash(), nil)
}

func (l lockedRefs) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if ref.Type() != plumbing.HashReference {
		return l.Storer.CheckAndSetReference(ref, old)
	}
	var want *plumbing.Hash
	if old != nil {
		h := old.Hash()
		want = &h
	}
	return l.r.setRef(ref.Name(), ref.Hash(), want)
}

// dropEmptyTrackingRefs removes the remote-tracking refs of the remote
// that are empty files, which an older astra (or any go-git program)
// killed while fetching leaves behind: such a ref is only the remote's
// answer at the last fetch, and the next fetch writes it again, where
// left in place it fails every run. Said in the warnings.
func (r *Repo) dropEmptyTrackingRefs() error {
	dir := filepath.Join(r.commonDir, "refs", "remotes", r.opts.Remote)
	return filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || fi.IsDir() || fi.Size() != 0 || strings.HasSuffix(p, ".lock") {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.commonDir, p)
		r.warnings = append(r.warnings, fmt.Sprintf("removed %s, an empty ref a git process killed while fetching left; this run fetches it again", filepath.ToSlash(rel)))
		return nil
	})
}
