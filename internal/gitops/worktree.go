package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/klauspost/compress/zlib"
)

// cleanPath turns a caller's path (relative to the worktree root, or absolute
// inside it) into a clean slash path, refusing anything outside the worktree
// or inside .git.
func (r *Repo) cleanPath(p string) (string, error) {
	orig := p
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(r.dir, p)
		if err != nil {
			return "", fmt.Errorf("path %s is not inside the worktree %s", orig, r.dir)
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not a file inside the worktree %s", orig, r.dir)
	}
	for _, part := range strings.Split(p, "/") {
		if strings.EqualFold(part, ".git") {
			return "", fmt.Errorf("path %q is inside .git", orig)
		}
	}
	return p, nil
}

// fsPath is the absolute worktree path of a clean slash path.
func (r *Repo) fsPath(p string) string { return filepath.Join(r.dir, filepath.FromSlash(p)) }

// diskFile is a worktree file read for a commit: its blob (already stored)
// and its stat, or absent.
type diskFile struct {
	path   string
	absent bool
	hash   plumbing.Hash
	mode   filemode.FileMode
	fi     os.FileInfo
}

// storeFile hashes the file at p and stores its blob unless the repository
// already has it.
func (r *Repo) storeFile(p string) (diskFile, error) {
	fi, err := os.Lstat(r.fsPath(p))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return diskFile{path: p, absent: true}, nil // (ENOTDIR: a parent is a file now)
	}
	if err != nil {
		return diskFile{}, err
	}
	var data []byte
	mode := filemode.Regular
	switch {
	case fi.Mode().IsRegular():
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
		data, err = os.ReadFile(r.fsPath(p))
	case fi.Mode()&fs.ModeSymlink != 0:
		mode = filemode.Symlink
		var target string
		target, err = os.Readlink(r.fsPath(p))
		data = []byte(filepath.ToSlash(target))
	case fi.IsDir():
		return diskFile{}, fmt.Errorf("%s is a directory: pass the files under it", p)
	default:
		return diskFile{}, fmt.Errorf("%s is not a regular file", p)
	}
	if err != nil {
		return diskFile{}, err
	}
	h, err := r.storeBlob(data)
	if err != nil {
		return diskFile{}, err
	}
	return diskFile{path: p, hash: h, mode: mode, fi: fi}, nil
}

// storeBlob stores data as a blob (as a loose object, unless present).
func (r *Repo) storeBlob(data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(plumbing.BlobObject, data)
	if r.st.HasEncodedObject(h) == nil {
		return h, nil
	}
	return h, r.writeLoose(plumbing.BlobObject, h, data)
}

var gzipMagic = []byte{0x1f, 0x8b}

// writeLoose writes a loose object compressed at zlib's fastest level, as
// git does by default (core.looseCompression), and gzip content (a ledger
// segment) stored: go-git's own writer spends ~100 ms per run deflating a
// 4 MiB segment that does not compress.
func (r *Repo) writeLoose(typ plumbing.ObjectType, h plumbing.Hash, data []byte) (err error) {
	name := h.String()
	dir := filepath.Join(r.commonDir, "objects", name[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	level := zlib.BestSpeed
	if bytes.HasPrefix(data, gzipMagic) {
		level = zlib.NoCompression
	}
	zw, err := zlib.NewWriterLevel(tmp, level)
	if err != nil {
		return err
	}
	if _, err = fmt.Fprintf(zw, "%s %d\x00", typ, len(data)); err != nil {
		return err
	}
	if _, err = zw.Write(data); err != nil {
		return err
	}
	if err = zw.Close(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o444); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name[2:]))
}

// updateIndex sets the index entries of the given files (removing absent
// ones, and anything a file replaced: a directory's entries, or a file where a
// parent directory now is), so that `git status` sees them as committed.
// Entries for other paths are kept as they are. The caller holds the index
// lock l, as git does while it reads and rewrites the index.
func (r *Repo) updateIndex(l *indexLock, files []diskFile) error {
	drop := map[string]bool{}    // exact names to remove
	dropDir := map[string]bool{} // directories whose entries go
	var add []*index.Entry
	for _, f := range files {
		drop[f.path] = true
		dropDir[f.path] = true
		if f.absent {
			continue
		}
		for d := path.Dir(f.path); d != "."; d = path.Dir(d) {
			drop[d] = true
		}
		e := &index.Entry{
			Name:       f.path,
			Hash:       f.hash,
			Mode:       f.mode,
			Size:       uint32(f.fi.Size()),
			ModifiedAt: f.fi.ModTime(),
		}
		fillStat(e, f.fi)
		add = append(add, e)
	}
	dropped := func(name string) bool { return drop[name] || underAny(name, dropDir) }

	data, err := os.ReadFile(l.final)
	var out []byte
	switch {
	case err == nil:
		out, err = editIndex(data, dropped, add)
		if errors.Is(err, errIndexFormat) {
			out, err = r.editIndexGoGit(dropped, add)
		}
	case errors.Is(err, fs.ErrNotExist):
		out, err = r.editIndexGoGit(dropped, add)
	}
	if err == nil {
		err = l.commit(out)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", r.relGit(l.final), err)
	}
	return nil
}

// editIndexGoGit is editIndex through go-git's index codec, for formats the
// raw editor leaves alone (version 4). It loses flags go-git does not model.
func (r *Repo) editIndexGoGit(dropped func(string) bool, add []*index.Entry) ([]byte, error) {
	idx, err := r.st.Index()
	if err != nil {
		return nil, err
	}
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if !dropped(e.Name) {
			kept = append(kept, e)
		}
	}
	idx.Entries = append(kept, add...)
	idx.Cache = nil // go-git does not write the cache-tree extension; git rebuilds it
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// underAny reports whether name lies under one of the directories in dirs.
func underAny(name string, dirs map[string]bool) bool {
	for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if dirs[name[:i]] {
			return true
		}
	}
	return false
}

// writeWorktreeFile makes the worktree file at p hold the blob of entry e
// (written to a temporary file and renamed, so a reader never sees half a
// ledger), creating parent directories and replacing a directory if needed.
func (r *Repo) writeWorktreeFile(p string, e *object.TreeEntry) (diskFile, error) {
	blob, err := object.GetBlob(r.st, e.Hash)
	if err != nil {
		return diskFile{}, fmt.Errorf("read %s: %w", p, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return diskFile{}, err
	}
	defer rd.Close()
	abs := r.fsPath(p)
	if err := r.mkdirs(path.Dir(p)); err != nil {
		return diskFile{}, err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		if err := os.RemoveAll(abs); err != nil {
			return diskFile{}, err
		}
	}
	if e.Mode == filemode.Symlink {
		target, err := io.ReadAll(rd)
		if err != nil {
			return diskFile{}, err
		}
		_ = os.Remove(abs)
		if err := os.Symlink(filepath.FromSlash(string(target)), abs); err != nil {
			return diskFile{}, err
		}
	} else {
		perm := os.FileMode(0o644)
		if e.Mode == filemode.Executable {
			perm = 0o755
		}
		tmp, err := os.CreateTemp(filepath.Dir(abs), ".astra-tmp-*")
		if err != nil {
			return diskFile{}, err
		}
		_, err = io.Copy(tmp, rd)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), perm)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), abs)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return diskFile{}, fmt.Errorf("write %s: %w", p, err)
		}
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return diskFile{}, err
	}
	return diskFile{path: p, hash: e.Hash, mode: e.Mode, fi: fi}, nil
}

// mkdirs creates directory d (slash path) in the worktree, replacing a file
// that stands where a directory must be.
func (r *Repo) mkdirs(d string) error {
	if d == "." {
		return nil
	}
	abs := r.fsPath(d)
	if fi, err := os.Lstat(abs); err == nil {
		if fi.IsDir() {
			return nil
		}
		if err := os.Remove(abs); err != nil {
			return err
		}
	}
	if err := r.mkdirs(path.Dir(d)); err != nil {
		return err
	}
	if err := os.Mkdir(abs, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// removeWorktreeFile deletes the file at p and the directories it leaves
// empty (up to, not including, the worktree root).
func (r *Repo) removeWorktreeFile(p string) error {
	if err := os.Remove(r.fsPath(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if os.Remove(r.fsPath(d)) != nil {
			break // not empty (or gone): stop climbing
		}
	}
	return nil
}

// sameAsDisk reports whether the worktree file at p holds exactly the blob
// of entry e (nil: the file must be absent). It hashes the file only when the
// size matches.
func (r *Repo) sameAsDisk(p string, e *object.TreeEntry) (bool, error) {
	fi, err := os.Lstat(r.fsPath(p))
	if errors.Is(err, fs.ErrNotExist) {
		return e == nil, nil
	}
	if err != nil {
		return false, err
	}
	if e == nil || fi.IsDir() {
		return false, nil
	}
	isLink := fi.Mode()&fs.ModeSymlink != 0
	if isLink != (e.Mode == filemode.Symlink) {
		return false, nil
	}
	if !isLink && (fi.Mode()&0o111 != 0) != (e.Mode == filemode.Executable) {
		return false, nil
	}
	var data []byte
	if isLink {
		t, err := os.Readlink(r.fsPath(p))
		if err != nil {
			return false, err
		}
		data = []byte(filepath.ToSlash(t))
	} else {
		size, err := r.st.EncodedObjectSize(e.Hash)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", p, err)
		}
		if size != fi.Size() {
			return false, nil
		}
		if data, err = os.ReadFile(r.fsPath(p)); err != nil {
			return false, err
		}
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data) == e.Hash, nil
}

// Materialize makes the worktree files under prefix (a directory such as
// "var/", or a single file) equal to the tip of astra's branch: it writes files that differ and
// removes files the tip does not have. Use it in state-branch mode (the branch
// is not checked out) and after Sync. Files outside prefix are untouched. When
// the branch is checked out, the index entries of the files it writes or
// removes are updated too, so `git status` stays clean.
func (r *Repo) Materialize(prefix string) error {
	p, err := r.cleanPath(prefix)
	if err != nil {
		return err
	}
	tip, err := r.tip()
	if err != nil {
		return err
	}
	var want plumbing.Hash         // tree at prefix in the tip; zero when absent
	var wantFile *object.TreeEntry // prefix names a file in the tip
	if !tip.IsZero() {
		c, err := object.GetCommit(r.st, tip)
		if err != nil {
			return fmt.Errorf("read %s: %w", r.branch, err)
		}
		t, err := c.Tree()
		if err != nil {
			return err
		}
		e, err := t.FindEntry(p)
		switch {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		case err != nil:
			return fmt.Errorf("read %s in %s: %w", p, r.branch, err)
		case e.Mode == filemode.Dir:
			want = e.Hash
		default:
			wantFile = e
		}
	}
	wantFiles := map[string]*object.TreeEntry{}
	var changes []fileChange
	if wantFile != nil {
		changes = append(changes, fileChange{path: p, to: wantFile})
	} else if err := r.diffFiles(plumbing.ZeroHash, want, p, &changes); err != nil {
		return err
	}
	for _, c := range changes {
		wantFiles[c.path] = c.to
	}
	var writes []fileChange
	for _, c := range changes {
		if r.leftOut(c.path, c.to) {
			continue
		}
		same, err := r.sameAsDisk(c.path, c.to)
		if err != nil {
			return err
		}
		if !same {
			writes = append(writes, c)
		}
	}
	// Remove what the tip does not have.
	root := r.fsPath(p)
	var extra []string
	err = filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(r.dir, abs)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, ok := wantFiles[rel]; !ok {
			extra = append(extra, rel)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(writes) == 0 && len(extra) == 0 {
		return nil
	}
	// Take the index lock before touching files: a checkout that another
	// process is using is left as it is.
	var lock *indexLock
	if r.checkedOut {
		if lock, err = r.lockIndex(); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		defer lock.release()
	}
	var updated []diskFile
	for _, rel := range extra { // first: a file may stand where a directory goes
		if err := r.removeWorktreeFile(rel); err != nil {
			return err
		}
		updated = append(updated, diskFile{path: rel, absent: true})
	}
	for _, c := range writes {
		f, err := r.writeWorktreeFile(c.path, c.to)
		if err != nil {
			return err
		}
		updated = append(updated, f)
	}
	if lock != nil {
		return r.updateIndex(lock, updated)
	}
	return nil
}
