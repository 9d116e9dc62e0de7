package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// RestoreCommitted puts the files at paths back as commit has them: in the
// worktree and, when astra's branch is checked out, in the index (a file
// commit lacks is removed). Before a file is replaced or removed, its
// bytes are copied to <quarantine>/<commit, 12 digits>/<path> (with
// ".1", ".2", ... added when that name holds other bytes): nothing is
// deleted that is not kept. It returns the copies it wrote, which the
// caller commits with the restored files. The index lock is taken first:
// a checkout another process is using is left as it is.
func (r *Repo) RestoreCommitted(commit string, paths []string, quarantine string) (copies []string, err error) {
	h := plumbing.NewHash(commit)
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("restore from %.12s: %w", commit, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, err
	}
	qdir, err := r.cleanPath(path.Join(quarantine, h.String()[:12]))
	if err != nil {
		return nil, err
	}
	type change struct {
		path string
		want *object.TreeEntry // nil: commit lacks it
	}
	var changes []change
	for _, p := range paths {
		cp, err := r.cleanPath(p)
		if err != nil {
			return nil, err
		}
		var want *object.TreeEntry
		switch e, err := t.FindEntry(cp); {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		case err != nil:
			return nil, fmt.Errorf("read %s in %.12s: %w", cp, commit, err)
		case !e.Mode.IsFile():
			return nil, fmt.Errorf("restore %s: it is a directory in %.12s; name its files", cp, commit)
		default:
			want = e
		}
		same, err := r.sameAsDisk(cp, want)
		if err != nil {
			return nil, err
		}
		if !same {
			changes = append(changes, change{cp, want})
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	var lock *indexLock
	if r.checkedOut {
		if lock, err = r.lockIndex(); err != nil {
			return nil, fmt.Errorf("restore: nothing was changed: %w", err)
		}
		defer lock.release()
	}
	for _, ch := range changes {
		q, err := r.quarantine(ch.path, qdir)
		if err != nil {
			return copies, fmt.Errorf("restore: keeping %s under %s failed, so nothing was restored: %w", ch.path, qdir, err)
		}
		if q != "" {
			copies = append(copies, q)
		}
	}
	files := make([]diskFile, 0, len(changes))
	for _, ch := range changes {
		if ch.want == nil {
			if err := r.removeWorktreeFile(ch.path); err != nil {
				return copies, err
			}
			files = append(files, diskFile{path: ch.path, absent: true})
			continue
		}
		f, err := r.writeWorktreeFile(ch.path, ch.want)
		if err != nil {
			return copies, err
		}
		files = append(files, f)
	}
	if lock != nil {
		return copies, r.updateIndex(lock, files)
	}
	return copies, nil
}

// quarantine copies the worktree file at p (if any) to dir/p, or to
// dir/p.N when that holds other bytes, and returns the copy's path; "" when
// there is no file, or dir already keeps these bytes.
func (r *Repo) quarantine(p, dir string) (string, error) {
	fi, err := os.Lstat(r.fsPath(p))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var data []byte
	switch {
	case fi.Mode().IsRegular():
		data, err = os.ReadFile(r.fsPath(p))
	case fi.Mode()&fs.ModeSymlink != 0:
		var target string
		target, err = os.Readlink(r.fsPath(p))
		data = []byte(filepath.ToSlash(target))
	default:
		return "", fmt.Errorf("%s is not a file", p)
	}
	if err != nil {
		return "", err
	}
	base := path.Join(dir, p)
	if err := r.mkdirs(path.Dir(base)); err != nil {
		return "", err
	}
	for n := 0; ; n++ {
		name := base
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		f, err := os.OpenFile(r.fsPath(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			if old, err := os.ReadFile(r.fsPath(name)); err == nil && bytes.Equal(old, data) {
				return "", nil
			}
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(r.fsPath(name))
			return "", err
		}
		return name, nil
	}
}
