package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// Restore puts the worktree files at paths (from Changes) back as they were
// when before was taken, as far as git knows what that was. A path is
//
//   - left alone, and not reported, when it now is as the index has it:
//     astra's own sync wrote it, or it was written with the same bytes;
//   - removed when the scan did not see it (it was created since);
//   - rewritten from the index when the scan saw it as the index has it
//     (git's own test of an unchanged file: size and modification time);
//   - kept, with the reason, otherwise: what it held then is in no commit,
//     so nothing can put it back.
func (r *Repo) Restore(before *Snapshot, paths []string) (restored []string, kept map[string]string, err error) {
	idx, err := r.st.Index()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the index: %w", err)
	}
	entries := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		entries[e.Name] = e
	}
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	kept = map[string]string{}
	for _, p := range paths {
		name := filepath.FromSlash(p)
		e := entries[p]
		old, seen := before.files[p]
		fi, lerr := root.Lstat(name)
		gone := errors.Is(lerr, fs.ErrNotExist)
		switch {
		case lerr != nil && !gone:
			kept[p] = lerr.Error()
			continue
		case gone && e == nil && !seen, !gone && e != nil && sameAsIndex(stampOf(fi), e):
			continue // as git has it
		}
		switch {
		case !seen:
			if err := root.RemoveAll(name); err != nil {
				kept[p] = err.Error()
				continue
			}
		case e == nil:
			kept[p] = "it was not in git before the tool ran"
			continue
		case !sameAsIndex(old, e):
			kept[p] = "it held changes no commit has before the tool ran"
			continue
		default:
			if err := r.putFromIndex(root, name, e); err != nil {
				kept[p] = err.Error()
				continue
			}
		}
		restored = append(restored, p)
	}
	return restored, kept, nil
}

// sameAsIndex is git's stat test as git runs it by default: size, mode,
// and modification and change times to the second. An entry git wrote
// while the file could still change within the same second has its size
// smudged to 0, and fails the test.
func sameAsIndex(s stamp, e *index.Entry) bool {
	mode, err := filemode.NewFromOSFileMode(s.mode)
	if err != nil || mode != e.Mode {
		return false
	}
	return s.size == int64(e.Size) && s.mtime/1e9 == e.ModifiedAt.Unix() &&
		(e.CreatedAt.IsZero() || s.ctime/1e9 == e.CreatedAt.Unix())
}

// putFromIndex writes the index's version of name in place of whatever is
// there.
func (r *Repo) putFromIndex(root *os.Root, name string, e *index.Entry) error {
	obj, err := r.st.EncodedObject(plumbing.BlobObject, e.Hash)
	if err != nil {
		return fmt.Errorf("reading its blob %s: %w", e.Hash, err)
	}
	data, err := readObject(obj)
	if err != nil {
		return err
	}
	if err := root.RemoveAll(name); err != nil {
		return err
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if e.Mode == filemode.Symlink {
		return root.Symlink(string(data), name)
	}
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	return root.WriteFile(name, data, perm)
}
