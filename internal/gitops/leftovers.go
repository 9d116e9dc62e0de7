package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// maxUnpushed bounds the walk of Unpushed: far more commits than runs
// between two pushes ever make.
const maxUnpushed = 10_000

// Unpushed counts the commits of astra's branch that the remote did not
// have at the last fetch or push (its remote-tracking branch): commits a
// run made and did not push (--no-push, a kill between commit and push, a
// push that failed). known is false when that cannot be told: there is no
// remote-tracking branch, or the branch does not descend from it within
// maxUnpushed first-parent commits.
func (r *Repo) Unpushed() (n int, known bool, err error) {
	ref, err := r.st.Reference(plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short()))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	h, err := r.tip()
	if err != nil {
		return 0, false, err
	}
	for ; n <= maxUnpushed && !h.IsZero(); n++ {
		if h == ref.Hash() {
			return n, true, nil
		}
		c, err := object.GetCommit(r.st, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return 0, false, nil // a shallow boundary
		}
		if err != nil {
			return 0, false, fmt.Errorf("read commit %s of %s: %w", h, r.branch.Short(), err)
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return 0, false, nil
}

// Drift is how the worktree files under a prefix differ from the tip of
// astra's branch, for the append-only logs astra keeps there.
type Drift struct {
	// Behind: the worktree content is a proper prefix of the tip's, or
	// missing, and (on the checked-out branch) the index still describes
	// another version: what a sync killed after moving the branch and
	// before writing the files leaves. Appended to and committed, such a
	// file would drop what the tip added. Materialize restores them.
	Behind []string
	// Ahead: the tip's content followed by more bytes, or a file only the
	// worktree has: appends a run made and did not commit.
	Ahead []string
	// Other: any other difference (an edit by hand; on a state branch, the
	// checked-out branch's older copy).
	Other []string
}

// Drift compares the worktree files under prefix (a directory such as
// "var/schedules/", or one file) with the tip of astra's branch; nothing
// differs from a branch that has no commit yet. Files of equal size are
// compared by size only: an append-only log that was not appended to has
// not changed, and anything else is for the reader of the log to find.
func (r *Repo) Drift(prefix string) (Drift, error) {
	var d Drift
	p, err := r.cleanPath(prefix)
	if err != nil {
		return d, err
	}
	tip, err := r.tip()
	if err != nil || tip.IsZero() {
		return d, err
	}
	tipFiles, err := r.filesUnder(tip, p)
	if err != nil {
		return d, err
	}
	var behind []string
	for path, e := range tipFiles {
		if r.leftOut(path, e) {
			continue // a sparse checkout's choice, not a sync cut short
		}
		size, err := r.st.EncodedObjectSize(e.Hash)
		if err != nil {
			return d, fmt.Errorf("read %s in %s: %w", path, r.branch.Short(), err)
		}
		fi, err := os.Lstat(r.fsPath(path))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			behind = append(behind, path)
			continue
		case err != nil:
			return d, err
		case !fi.Mode().IsRegular():
			d.Other = append(d.Other, path)
			continue
		case fi.Size() == size:
			continue
		}
		disk, err := os.ReadFile(r.fsPath(path))
		if err != nil {
			return d, err
		}
		obj, err := r.st.EncodedObject(plumbing.BlobObject, e.Hash)
		if err != nil {
			return d, err
		}
		want, err := readObject(obj)
		if err != nil {
			return d, err
		}
		switch {
		case bytes.HasPrefix(want, disk):
			behind = append(behind, path)
		case bytes.HasPrefix(disk, want):
			d.Ahead = append(d.Ahead, path)
		default:
			d.Other = append(d.Other, path)
		}
	}
	if len(behind) > 0 && r.checkedOut {
		// A file cut after the index was written is someone's edit (git
		// restores it), not a sync cut short.
		idx, err := r.st.Index()
		if err != nil {
			return d, fmt.Errorf("read .git/index: %w", err)
		}
		for _, path := range behind {
			if e, err := idx.Entry(path); err == nil && e.Hash == tipFiles[path].Hash {
				d.Other = append(d.Other, path)
			} else {
				d.Behind = append(d.Behind, path)
			}
		}
	} else {
		d.Behind = behind
	}
	// Files only the worktree has.
	err = filepath.WalkDir(r.fsPath(p), func(abs string, de fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || de.IsDir() {
			return err
		}
		rel, err := filepath.Rel(r.dir, abs)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); tipFiles[rel] == nil && de.Type().IsRegular() {
			d.Ahead = append(d.Ahead, rel)
		}
		return nil
	})
	slices.Sort(d.Behind)
	slices.Sort(d.Ahead)
	slices.Sort(d.Other)
	return d, err
}

// filesUnder lists the files of commit h at p, a directory or one file.
func (r *Repo) filesUnder(h plumbing.Hash, p string) (map[string]*object.TreeEntry, error) {
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.branch, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, err
	}
	out := map[string]*object.TreeEntry{}
	e, err := t.FindEntry(p)
	switch {
	case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
	case err != nil:
		return nil, fmt.Errorf("read %s in %s: %w", p, r.branch.Short(), err)
	case e.Mode.IsFile():
		out[p] = e
	default:
		var files []fileChange
		if err := r.diffFiles(plumbing.ZeroHash, e.Hash, p, &files); err != nil {
			return nil, err
		}
		for _, f := range files {
			if f.to.Mode.IsFile() {
				out[f.path] = f.to
			}
		}
	}
	return out, nil
}
