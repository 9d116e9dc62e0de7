package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// setRef points ref at h, as git does: the new value goes to <ref>.lock,
// which is renamed over the ref. go-git truncates the ref file and then
// writes it, so a run killed in between left an empty ref: a broken branch,
// whose commits the next run could not see and dropped. With old set, the
// ref must still point at old (zero: not exist), checked under the lock.
// A lock a killed run left is removed as the index's is (removeStaleLock).
func (r *Repo) setRef(ref plumbing.ReferenceName, h plumbing.Hash, old *plumbing.Hash) error {
	final := filepath.Join(r.commonDir, filepath.FromSlash(ref.String()))
	return r.writeLocked(final, []byte(h.String()+"\n"), func() error {
		if old == nil {
			return nil
		}
		cur := plumbing.ZeroHash
		switch got, err := r.st.Reference(ref); {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
		case err != nil:
			return err
		default:
			cur = got.Hash()
		}
		if cur != *old {
			return fmt.Errorf("%s changed while astra was writing it: another process is using this repository", ref.Short())
		}
		return nil
	})
}

// writeLocked replaces the file final in the git dir with data as git
// writes its files: data goes to <final>.lock, created exclusively, which
// is renamed over final; check runs while the lock is held and stops the
// write with its error. A lock a killed run left is removed as the
// index's is (removeStaleLock); a live one is ErrLocked.
func (r *Repo) writeLocked(final string, data []byte, check func() error) (err error) {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	lock := final + ".lock"
	var f *os.File
	for attempt := 0; ; attempt++ {
		if f, err = os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", r.relGit(lock), err)
		}
		if attempt > 0 {
			return fmt.Errorf("%w (%s was just taken by another process)", ErrLocked, r.relGit(lock))
		}
		if err := r.removeStaleLock(lock); err != nil {
			return err
		}
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = f.Close()
			_ = os.Remove(lock)
		}
	}()
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(lock, final); err != nil {
		return err
	}
	renamed = true
	return nil
}
