package gitops

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// MaxScanFiles bounds a worktree scan: a checkout with more files than
// this (not counting what git ignores) is not watched.
const MaxScanFiles = 200_000

// ErrTooManyFiles: the worktree has more than MaxScanFiles files.
var ErrTooManyFiles = fmt.Errorf("the worktree has more than %d files (not counting ignored ones)", MaxScanFiles)

// racyWindow: a file written this close to a scan (or after it started)
// may change again within the same file-time tick, with the same size, and
// a stat would not show it; its content is hashed instead, as git does for
// "racily clean" index entries.
const racyWindow = 100 * time.Millisecond

// Snapshot is what a scan of the worktree saw, so that a later scan can
// say which files changed in between. Files git ignores (.gitignore files,
// .git/info/exclude) and .git itself are not looked at.
type Snapshot struct {
	files map[string]stamp
}

type stamp struct {
	size  int64
	mtime int64 // nanoseconds
	ctime int64 // nanoseconds where the system has it: no one can set it back
	ino   uint32
	mode  fs.FileMode
	racy  bool
	sum   [sha256.Size]byte // of the content, for racy files only
}

// Scan records the stat of every file in the worktree, except under the
// slash prefixes in skip (e.g. "var/schedules/"). It costs one stat per
// file, and reading the few files written just before it.
func (r *Repo) Scan(skip ...string) (*Snapshot, error) {
	start := time.Now()
	s := &Snapshot{files: map[string]stamp{}}
	err := r.walk(skip, func(p string, fi fs.FileInfo) error {
		st := stampOf(fi)
		if !fi.ModTime().Before(start.Add(-racyWindow)) {
			st.racy, st.sum = true, r.contentSum(p)
		}
		s.files[p] = st
		return nil
	})
	return s, err
}

// Changes scans the worktree again and lists (sorted) the files added,
// changed or removed since before was taken.
func (r *Repo) Changes(before *Snapshot, skip ...string) ([]string, error) {
	var out []string
	seen := make(map[string]bool, len(before.files))
	err := r.walk(skip, func(p string, fi fs.FileInfo) error {
		seen[p] = true
		old, ok := before.files[p]
		now := stampOf(fi)
		switch {
		case !ok, old.size != now.size || old.mtime != now.mtime || old.ctime != now.ctime || old.ino != now.ino || old.mode != now.mode:
			out = append(out, p)
		case old.racy && r.contentSum(p) != old.sum:
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p := range before.files {
		if !seen[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

func stampOf(fi fs.FileInfo) stamp {
	var e index.Entry
	fillStat(&e, fi)
	return stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: e.CreatedAt.UnixNano(), ino: e.Inode, mode: fi.Mode()}
}

// contentSum hashes a file (a symlink: its target); unreadable is zero.
func (r *Repo) contentSum(p string) [sha256.Size]byte {
	full := r.fsPath(p)
	if target, err := os.Readlink(full); err == nil {
		return sha256.Sum256([]byte(target))
	}
	b, _ := os.ReadFile(full)
	return sha256.Sum256(b)
}

// walk calls fn for every file (anything but a directory) of the worktree
// that git does not ignore, skipping .git and the skip prefixes.
func (r *Repo) walk(skip []string, fn func(p string, fi fs.FileInfo) error) error {
	patterns := readIgnore(filepath.Join(r.commonDir, "info", "exclude"), nil)
	n := 0
	err := filepath.WalkDir(r.dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we looked
			}
			return err
		}
		rel, _ := filepath.Rel(r.dir, full)
		if rel == "." {
			patterns = append(patterns, readIgnore(filepath.Join(full, ".gitignore"), nil)...)
			return nil
		}
		p := filepath.ToSlash(rel)
		parts := strings.Split(p, "/")
		if d.IsDir() {
			p += "/"
		}
		if d.Name() == ".git" || slices.ContainsFunc(skip, func(s string) bool { return strings.HasPrefix(p, s) }) ||
			gitignore.NewMatcher(patterns).Match(parts, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			patterns = append(patterns, readIgnore(filepath.Join(full, ".gitignore"), parts)...)
			return nil
		}
		if n++; n > MaxScanFiles {
			return ErrTooManyFiles
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return fn(p, fi)
	})
	return err
}

// readIgnore reads the patterns of one ignore file, for paths under domain.
func readIgnore(file string, domain []string) []gitignore.Pattern {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := sc.Text(); !strings.HasPrefix(line, "#") && strings.TrimSpace(line) != "" {
			ps = append(ps, gitignore.ParsePattern(line, domain))
		}
	}
	return ps
}

// ScanUnder is Scan of the files under the slash directory prefix
// ("var/") alone, those git ignores included: astra's own files, which no
// ignore rule of a tool's may hide.
func (r *Repo) ScanUnder(prefix string) (*Snapshot, error) {
	s := &Snapshot{files: map[string]stamp{}}
	err := r.walkUnder(prefix, func(p string, fi fs.FileInfo) error {
		s.files[p] = stampOf(fi)
		return nil
	})
	return s, err
}

// ChangesUnder is Changes for a snapshot of ScanUnder.
func (r *Repo) ChangesUnder(before *Snapshot, prefix string) ([]string, error) {
	now, err := r.ScanUnder(prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for p, st := range now.files {
		if old, ok := before.files[p]; !ok || old != st {
			out = append(out, p)
		}
	}
	for p := range before.files {
		if _, ok := now.files[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Restamp takes the files at paths into s as they are now (or out of it,
// when they are gone): a writer s should not report wrote them.
func (r *Repo) Restamp(s *Snapshot, paths ...string) {
	for _, p := range paths {
		if fi, err := os.Lstat(r.fsPath(p)); err == nil && !fi.IsDir() {
			s.files[p] = stampOf(fi)
		} else {
			delete(s.files, p)
		}
	}
}

// walkUnder calls fn for every file (anything but a directory) under the
// slash directory prefix.
func (r *Repo) walkUnder(prefix string, fn func(p string, fi fs.FileInfo) error) error {
	err := filepath.WalkDir(r.fsPath(prefix), func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.dir, full)
		return fn(filepath.ToSlash(rel), fi)
	})
	return err
}

// Has reports whether the scan saw path.
func (s *Snapshot) Has(path string) bool {
	_, ok := s.files[path]
	return ok
}

// Size is the size the scan saw path at.
func (s *Snapshot) Size(path string) (int64, bool) {
	st, ok := s.files[path]
	return st.size, ok
}

// Paths lists the files the scan saw, sorted.
func (s *Snapshot) Paths() []string {
	out := make([]string, 0, len(s.files))
	for p := range s.files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
