// Package repofs reads and writes files of the repository astra works on.
// A pull request controls that content, symlinks included, so a path is
// used only when, with every symlink resolved, it is a regular file (or a
// directory, where one is asked for) inside the repository root. Refusals
// name the repository path and never the link's target or any content.
package repofs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Why a repository path was refused; test with errors.Is.
var (
	ErrOutside    = errors.New("is outside the repository")
	ErrLink       = errors.New("is a symlink to a file outside the repository")
	ErrNotRegular = errors.New("is not a regular file")
	ErrNotDir     = errors.New("is not a directory")
	ErrTooLarge   = errors.New("is too large")
)

// Error is a refused repository path.
type Error struct {
	Path string // slash path relative to the repository root
	Err  error  // one of the Err* values above, possibly wrapped with detail
}

func (e *Error) Error() string { return e.Path + " " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Resolve returns the real root (absolute, symlinks resolved) and rel's
// real path relative to it. rel may name a file that does not exist yet,
// as long as its directory resolves inside the root.
func Resolve(root, rel string) (realRoot, realRel string, err error) {
	rel = filepath.FromSlash(rel)
	if !filepath.IsLocal(rel) {
		return "", "", &Error{Path: filepath.ToSlash(rel), Err: ErrOutside}
	}
	if realRoot, err = filepath.Abs(root); err == nil {
		realRoot, err = filepath.EvalSymlinks(realRoot)
	}
	if err != nil {
		return "", "", err
	}
	full, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if errors.Is(err, fs.ErrNotExist) {
		// Not there (or a dangling link): resolve the directory, so a new
		// file can be created, and report a missing one without the path a
		// dangling link points to.
		if _, lerr := os.Lstat(filepath.Join(realRoot, rel)); lerr == nil {
			return "", "", &fs.PathError{Op: "open", Path: filepath.ToSlash(rel), Err: fs.ErrNotExist}
		}
		dir, base := filepath.Split(rel)
		if dir == "" {
			return realRoot, rel, nil
		}
		_, realDir, derr := Resolve(realRoot, filepath.Clean(dir))
		if derr != nil {
			return "", "", derr
		}
		return realRoot, filepath.Join(realDir, base), nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", "", &fs.PathError{Op: "open", Path: filepath.ToSlash(rel), Err: err}
	}
	r, err := filepath.Rel(realRoot, full)
	if err != nil || !filepath.IsLocal(r) {
		return "", "", &Error{Path: filepath.ToSlash(rel), Err: ErrLink}
	}
	return realRoot, r, nil
}

// Stat describes rel after resolving it; it must be a regular file.
func Stat(root, rel string) (fs.FileInfo, error) {
	realRoot, realRel, err := Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	return statIn(realRoot, realRel, rel)
}

func statIn(realRoot, realRel, rel string) (fs.FileInfo, error) {
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(realRel)
	if err != nil {
		return nil, refuse(rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Path: filepath.ToSlash(rel), Err: ErrNotRegular}
	}
	return fi, nil
}

// Open opens rel for reading. Non-regular files (devices, FIFOs) are
// refused before they are opened, so that opening never blocks.
func Open(root, rel string) (*os.File, error) {
	realRoot, realRel, err := Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	if _, err := statIn(realRoot, realRel, rel); err != nil {
		return nil, err
	}
	// Open through os.Root as well: should the tree change between the
	// checks and the open, the open still cannot leave the root.
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(realRel)
	if err != nil {
		return nil, refuse(rel, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &Error{Path: filepath.ToSlash(rel), Err: ErrNotRegular}
	}
	return f, nil
}

// ReadFile reads rel whole, refusing a file of more than max bytes; the
// read itself is limited too, in case the file grows meanwhile.
func ReadFile(root, rel string, max int64) ([]byte, error) {
	f, err := Open(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := &Error{Path: filepath.ToSlash(rel), Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge
	}
	return data, nil
}

// OpenFile opens rel with flag (os.O_WRONLY|os.O_CREATE|os.O_APPEND, ...)
// for writing, creating its missing directories. An existing rel must be a
// regular file inside the root; a new one is created inside the root.
func OpenFile(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	realRoot, realRel, err := Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi, err := r.Lstat(realRel); err == nil && !fi.Mode().IsRegular() {
		return nil, &Error{Path: filepath.ToSlash(rel), Err: ErrNotRegular}
	}
	if dir := filepath.Dir(realRel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, refuse(rel, err)
		}
	}
	f, err := r.OpenFile(realRel, flag, perm)
	if err != nil {
		return nil, refuse(rel, err)
	}
	return f, nil
}

// Dir resolves directory rel: its real path relative to the real root.
// A missing directory is reported with fs.ErrNotExist.
func Dir(root, rel string) (realRoot, realRel string, err error) {
	realRoot, realRel, err = Resolve(root, rel)
	if err != nil {
		return "", "", err
	}
	fi, err := os.Lstat(filepath.Join(realRoot, realRel))
	if err != nil {
		return "", "", refuse(rel, err)
	}
	if !fi.IsDir() {
		return "", "", &Error{Path: filepath.ToSlash(rel), Err: ErrNotDir}
	}
	return realRoot, realRel, nil
}

// ReadDir lists directory rel (fs.ErrNotExist when it is missing).
func ReadDir(root, rel string) ([]fs.DirEntry, error) {
	realRoot, realRel, err := Dir(root, rel)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := fs.ReadDir(r.FS(), filepath.ToSlash(realRel))
	if err != nil {
		return nil, refuse(rel, err)
	}
	return entries, nil
}

// refuse restates an error about rel without any other path: os.Root's
// own errors say "path escapes from parent" when a link leads out.
func refuse(rel string, err error) error {
	rel = filepath.ToSlash(rel)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if strings.Contains(err.Error(), "escapes") {
		return &Error{Path: rel, Err: ErrLink}
	}
	return &fs.PathError{Op: "open", Path: rel, Err: err}
}
