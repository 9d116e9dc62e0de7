package approval

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// maxBound bounds how many files an approval of one tool binds.
const maxBound = 2000

// ToolFiles are the repository files an approval of t binds (sorted slash
// paths) and the directories it binds whole, which no other tool may write
// into. Without files:, each argument of t's command or rollback that
// names a repository path binds it and, when it is below the root, the
// whole directory holding it (what a script sources or imports usually
// sits beside it); a tool that lists files: names what it loads itself,
// and those globs replace the directories. What t declares it writes is
// its output, not its code, and is left out. A symbolic link among them is
// an error, as what it points to could change without the approval seeing
// it; so are more than maxBound files.
func ToolFiles(root string, t *model.Tool) (files, dirs []string, err error) {
	if t.Kind != model.KindExec {
		return nil, nil, nil
	}
	b := &binder{root: root, seen: map[string]bool{}, out: t.Writes}
	for _, a := range slices.Concat(t.Command, t.Rollback) {
		if err := b.bindArg(a, len(t.Files) > 0); err != nil {
			return b.files, b.dirs, err
		}
	}
	for _, g := range t.Files {
		if err := b.bind(g); err != nil {
			return b.files, b.dirs, err
		}
	}
	slices.Sort(b.files)
	return b.files, b.dirs, nil
}

// bindArg binds what an argument of the command names: a path below the
// root with its whole directory, unless the tool lists its files itself.
func (b *binder) bindArg(a string, listed bool) error {
	c := path.Clean(a)
	if a == "" || strings.HasPrefix(a, "-") || path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return nil
	}
	switch d := path.Dir(c); {
	case d != "." && !listed:
		return b.bind(d + "/**")
	case d != ".":
		return b.bind(c)
	}
	return b.bindFile(c) // a bare word: a file of the root, or only a word
}

// bindFile binds name when it is a file; a directory of that name is not
// bound by a bare word (it is likely an argument, such as where to write).
func (b *binder) bindFile(name string) error {
	fi, err := lstat(b.root, name)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir() {
		return nil
	}
	if err != nil {
		return err
	}
	return b.add(name, fi)
}

type binder struct {
	root  string
	out   []string // globs of what the tool writes, never bound
	files []string
	dirs  []string
	seen  map[string]bool
}

// bind adds what glob g matches: a path without wildcards is a file, or a
// directory bound whole; otherwise the files under the part before the
// first wildcard that g matches (that part is bound whole when g is
// "<dir>/**", and kept from tools in any case, as a new file there could
// match).
func (b *binder) bind(g string) error {
	prefix := staticPrefix(g)
	if prefix == g {
		switch fi, err := lstat(b.root, g); {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case fi.IsDir():
			return b.walk(g, "")
		default:
			return b.add(g, fi)
		}
	}
	if prefix == "" {
		return b.walk("", g)
	}
	match := g
	if g == prefix+"/**" {
		match = ""
	}
	return b.walk(prefix, match)
}

// walk adds the files under dir that match (every one when match is "").
func (b *binder) walk(dir, match string) error {
	if dir != "" {
		if ok, err := b.bindDir(dir); !ok || err != nil {
			return err
		}
	}
	entries, err := repofs.ReadDir(b.root, path.Join(".", dir))
	if err != nil {
		return fmt.Errorf("listing %s to bind it to approvals: %w", orRoot(dir), err)
	}
	for _, e := range entries {
		if err := b.entry(path.Join(dir, e.Name()), e, match); err != nil {
			return err
		}
	}
	return nil
}

// entry binds one entry of a walked directory.
func (b *binder) entry(p string, e fs.DirEntry, match string) error {
	matches := match == "" || model.Glob(match, p)
	switch {
	case p == ".git" || p == "var":
		return nil // git's and astra's own, never a tool's code
	case e.Type()&fs.ModeSymlink != 0 && matches:
		return fmt.Errorf("%s is a symbolic link among the files a tool runs: astra binds file contents to approvals, so commit the file itself", p)
	case e.IsDir():
		return b.walkSub(p, match)
	case e.Type().IsRegular() && matches:
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return b.add(p, fi)
	}
	return nil
}

// bindDir lists dir among the directories bound whole; false when there
// is no such directory.
func (b *binder) bindDir(dir string) (bool, error) {
	fi, err := lstat(b.root, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, fmt.Errorf("%s is a symbolic link among the files a tool runs: astra binds file contents to approvals, so commit the files themselves", dir)
	case !fi.IsDir():
		return false, nil
	}
	if !slices.Contains(b.dirs, dir) {
		b.dirs = append(b.dirs, dir)
	}
	return true, nil
}

// walkSub walks a subdirectory without listing it among the bound ones.
func (b *binder) walkSub(dir, match string) error {
	n := len(b.dirs)
	err := b.walk(dir, match)
	b.dirs = b.dirs[:n]
	return err
}

func (b *binder) add(p string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link among the files a tool runs: astra binds file contents to approvals, so commit the file itself", p)
	}
	if !fi.Mode().IsRegular() || b.seen[p] || slices.ContainsFunc(b.out, func(g string) bool { return model.Glob(g, p) }) {
		return nil
	}
	b.seen[p] = true
	b.files = append(b.files, p)
	if len(b.files) > maxBound {
		return fmt.Errorf("a tool's approval would bind more than %d files (under %s): give the tool's scripts a directory of their own, or list what it loads under files", maxBound, path.Dir(p))
	}
	return nil
}

// lstat describes rel without following a final symbolic link; rel
// reached through a link is refused.
func lstat(root, rel string) (fs.FileInfo, error) {
	dir := path.Dir(rel)
	realRoot, realDir, err := repofs.Dir(root, dir)
	if err != nil {
		return nil, err
	}
	if filepath.ToSlash(realDir) != dir {
		return nil, fmt.Errorf("%s is reached through a symbolic link: astra binds file contents to approvals, so commit the files themselves", rel)
	}
	return os.Lstat(filepath.Join(realRoot, realDir, path.Base(rel)))
}

// staticPrefix is the part of glob g before its first segment with a
// wildcard: g itself when it has none.
func staticPrefix(g string) string {
	segs := strings.Split(g, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, `*?[\`) {
			return strings.Join(segs[:i], "/")
		}
	}
	return g
}

func orRoot(dir string) string {
	if dir == "" {
		return "the repository's root"
	}
	return dir
}
