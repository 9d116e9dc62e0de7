// Package repofs reads and writes files of the repository astra works on.
// A pull request controls that content, symlinks included, so a path is
// used only when, with every symlink resolved, it is a regular file (or a
// directory, where one is asked for) inside the repository root. Refusals
// name the repository path and never the link's target or any content.
package repofs

import (
	"bytes"
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

// inRoot runs do on rel inside root through os.Root, which follows
// symlinks only while they stay inside. os.Root refuses every absolute
// link, so those are resolved by hand and kept when they lead back inside.
func inRoot[T any](root, rel string, do func(r *os.Root, name string) (T, error)) (T, error) {
	var zero T
	name := filepath.FromSlash(rel)
	if !filepath.IsLocal(name) {
		return zero, &Error{Path: filepath.ToSlash(rel), Err: ErrOutside}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return zero, err
	}
	defer r.Close()
	v, err := do(r, name)
	if err != nil && escapes(err) {
		_, realRel, rerr := Resolve(root, rel)
		if rerr != nil {
			return zero, rerr
		}
		v, err = do(r, realRel)
	}
	if err != nil {
		return zero, refuse(rel, err)
	}
	return v, nil
}

// escapes recognises os.Root's refusal of a path that leads out of it.
func escapes(err error) bool { return strings.Contains(err.Error(), "path escapes") }

// refuse restates an error about rel without any other path.
func refuse(rel string, err error) error {
	rel = filepath.ToSlash(rel)
	var re *Error
	switch {
	case errors.As(err, &re):
		return err
	case escapes(err):
		return &Error{Path: rel, Err: ErrLink}
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrNotDir):
		return &Error{Path: rel, Err: err}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: "open", Path: rel, Err: err}
}

// Resolve returns the real root (absolute, symlinks resolved) and rel's
// real path relative to it, following links by hand. rel may name a file
// that does not exist yet, as long as its directory resolves inside.
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
		// Not there, or a dangling link: say so without the link's target.
		if _, lerr := os.Lstat(filepath.Join(realRoot, rel)); lerr == nil {
			return "", "", &fs.PathError{Op: "open", Path: filepath.ToSlash(rel), Err: fs.ErrNotExist}
		}
		dir, base := filepath.Split(rel)
		if dir == "" {
			return realRoot, rel, nil
		}
		_, realDir, err := Resolve(realRoot, filepath.Clean(dir))
		if err != nil {
			return "", "", err
		}
		return realRoot, filepath.Join(realDir, base), nil
	}
	if err != nil {
		return "", "", refuse(rel, err)
	}
	r, err := filepath.Rel(realRoot, full)
	if err != nil || !filepath.IsLocal(r) {
		return "", "", &Error{Path: filepath.ToSlash(rel), Err: ErrLink}
	}
	return realRoot, r, nil
}

// Stat describes rel, which must be a regular file.
func Stat(root, rel string) (fs.FileInfo, error) {
	return inRoot(root, rel, func(r *os.Root, name string) (fs.FileInfo, error) {
		fi, err := r.Stat(name)
		if err == nil && !fi.Mode().IsRegular() {
			return nil, ErrNotRegular
		}
		return fi, err
	})
}

// Open opens rel for reading. Anything but a regular file (a device, a
// FIFO) is refused before it is opened, so that opening never blocks.
func Open(root, rel string) (*os.File, error) {
	return inRoot(root, rel, func(r *os.Root, name string) (*os.File, error) {
		if fi, err := r.Stat(name); err != nil || !fi.Mode().IsRegular() {
			return nil, cmpErr(err, ErrNotRegular)
		}
		f, err := r.Open(name)
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close() // replaced since the check above
			return nil, ErrNotRegular
		}
		return f, nil
	})
}

// cmpErr is err, or instead when err is nil.
func cmpErr(err, instead error) error {
	if err != nil {
		return err
	}
	return instead
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
	var size int64
	if fi, err := f.Stat(); err == nil {
		if size = fi.Size(); size > max {
			return nil, tooLarge
		}
	}
	// Sized from the stat (with the room ReadFrom wants to see the end): a
	// snapshot of megabytes is read without growing the buffer step by step.
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(f, max+1))
	data := buf.Bytes()
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
// regular file; a new one is created inside the root.
func OpenFile(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	return inRoot(root, rel, func(r *os.Root, name string) (*os.File, error) {
		if fi, err := r.Stat(name); err == nil && !fi.Mode().IsRegular() {
			return nil, ErrNotRegular
		}
		if dir := filepath.Dir(name); dir != "." {
			if err := r.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
		return r.OpenFile(name, flag, perm)
	})
}

// WriteFile replaces rel with data: written to a new file beside it and
// renamed over it, so a reader sees the old content or the new, never a
// part. An existing rel must be a regular file; missing directories are
// created inside the root.
func WriteFile(root, rel string, data []byte) error {
	_, err := inRoot(root, rel, func(r *os.Root, name string) (struct{}, error) {
		if fi, err := r.Lstat(name); err == nil && !fi.Mode().IsRegular() {
			return struct{}{}, ErrNotRegular
		}
		if dir := filepath.Dir(name); dir != "." {
			if err := r.MkdirAll(dir, 0o755); err != nil {
				return struct{}{}, err
			}
		}
		tmp := name + ".tmp"
		if err := r.WriteFile(tmp, data, 0o644); err != nil {
			// A full disk leaves the new file empty or cut: it must not
			// stay beside rel for a later commit to pick up.
			_ = r.Remove(tmp)
			return struct{}{}, err
		}
		if err := r.Rename(tmp, name); err != nil {
			_ = r.Remove(tmp)
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return err
}

// TempFiles lists, as slash paths, the files under directory rel that
// WriteFile left mid-write (a process killed between writing and
// renaming): nothing reads them, and they must not be committed.
func TempFiles(root, rel string) ([]string, error) {
	realRoot, realRel, err := Dir(root, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	err = filepath.WalkDir(filepath.Join(realRoot, realRel), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".tmp") {
			return err
		}
		r, err := filepath.Rel(realRoot, p)
		out = append(out, filepath.ToSlash(r))
		return err
	})
	return out, err
}

// Dir resolves directory rel: its real path relative to the real root, for
// walking. A missing directory is reported with fs.ErrNotExist.
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
	return inRoot(root, rel, func(r *os.Root, name string) ([]fs.DirEntry, error) {
		if fi, err := r.Stat(name); err != nil || !fi.IsDir() {
			return nil, cmpErr(err, ErrNotDir)
		}
		return fs.ReadDir(r.FS(), filepath.ToSlash(name))
	})
}
