package gitops

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// edit is the new state of one path in a tree: a blob with a mode, or removal
// (of a file or a whole subtree).
type edit struct {
	hash plumbing.Hash
	mode filemode.FileMode
	del  bool
}

// readTree returns the entries of tree h; the zero hash is the empty tree.
// An entry no checkout may have (".", "..", ".git", a name with "/" or
// NUL), which git itself refuses to check out, is left out with a warning:
// joined to a path, such a name leads outside the checkout.
func (r *Repo) readTree(h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	t, err := object.GetTree(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	entries := t.Entries
	for _, e := range t.Entries {
		if !safeName(e.Name) {
			// Skipped: never a path astra reads or writes, and gone from
			// the tree the next time astra rewrites it.
			entries = slices.DeleteFunc(slices.Clone(t.Entries), func(e object.TreeEntry) bool { return !safeName(e.Name) })
			r.warnOnce(fmt.Sprintf("tree %.12s holds an entry named %q, which no checkout may have (someone made it by hand): astra skips it", h, e.Name))
		}
	}
	return entries, nil
}

// warnOnce adds a warning the run has not given yet.
func (r *Repo) warnOnce(w string) {
	if !slices.Contains(r.warnings, w) {
		r.warnings = append(r.warnings, w)
	}
}

// safeName reports whether name is one path element a checkout may have.
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.EqualFold(name, ".git") && !strings.ContainsAny(name, "/\x00")
}

// editTree applies edits (keyed by slash paths relative to this tree) to tree
// base and returns the new tree's hash, or the zero hash when the result is
// empty. Only the trees along edited paths are read and written; everything
// else keeps its hash.
func (r *Repo) editTree(base plumbing.Hash, edits map[string]edit) (plumbing.Hash, error) {
	old, err := r.readTree(base)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := make(map[string]object.TreeEntry, len(old)+len(edits))
	for _, e := range old {
		entries[e.Name] = e
	}
	nested := map[string]map[string]edit{}
	for p, e := range edits {
		dir, rest, ok := strings.Cut(p, "/")
		if !ok {
			if e.del {
				delete(entries, p)
			} else {
				entries[p] = object.TreeEntry{Name: p, Mode: e.mode, Hash: e.hash}
			}
			continue
		}
		if nested[dir] == nil {
			nested[dir] = map[string]edit{}
		}
		nested[dir][rest] = e
	}
	for dir, sub := range nested {
		if _, ok := edits[dir]; ok {
			return plumbing.ZeroHash, fmt.Errorf("paths %s and %s/... conflict: a path is either a file or a directory", dir, dir)
		}
		var subBase plumbing.Hash
		if cur, ok := entries[dir]; ok && cur.Mode == filemode.Dir {
			subBase = cur.Hash
		}
		h, err := r.editTree(subBase, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(entries, dir) // emptied directories disappear, as in git
		} else {
			entries[dir] = object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	list := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		list = append(list, e)
	}
	return r.writeTree(list, base)
}

// writeTree stores a tree with the given entries, unless it equals unchanged.
func (r *Repo) writeTree(entries []object.TreeEntry, unchanged plumbing.Hash) (plumbing.Hash, error) {
	sort.Sort(object.TreeEntrySorter(entries))
	obj := r.st.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if obj.Hash() == unchanged {
		return unchanged, nil
	}
	return r.st.SetEncodedObject(obj)
}

// emptyTree stores and returns the empty tree (a root with every path deleted).
func (r *Repo) emptyTree() (plumbing.Hash, error) {
	return r.writeTree(nil, plumbing.ZeroHash)
}

// fileChange is a path whose blob differs between two trees; a nil side means
// the path does not exist there (as a file; it may be a directory).
type fileChange struct {
	path     string
	from, to *object.TreeEntry
}

// diffFiles lists the file-level differences between trees a and b (either
// may be zero), descending only into subtrees whose hashes differ.
func (r *Repo) diffFiles(a, b plumbing.Hash, prefix string, out *[]fileChange) error {
	if a == b {
		return nil
	}
	ea, err := r.readTree(a)
	if err != nil {
		return err
	}
	eb, err := r.readTree(b)
	if err != nil {
		return err
	}
	byName := make(map[string]*object.TreeEntry, len(ea))
	for i := range ea {
		byName[ea[i].Name] = &ea[i]
	}
	seen := make(map[string]bool, len(eb))
	for i := range eb {
		to := &eb[i]
		seen[to.Name] = true
		if err := r.diffEntry(path.Join(prefix, to.Name), byName[to.Name], to, out); err != nil {
			return err
		}
	}
	for i := range ea {
		if !seen[ea[i].Name] {
			if err := r.diffEntry(path.Join(prefix, ea[i].Name), &ea[i], nil, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Repo) diffEntry(p string, from, to *object.TreeEntry, out *[]fileChange) error {
	if from != nil && to != nil && from.Hash == to.Hash && from.Mode == to.Mode {
		return nil
	}
	var subA, subB plumbing.Hash
	fileFrom, fileTo := from, to
	if from != nil && from.Mode == filemode.Dir {
		subA, fileFrom = from.Hash, nil
	}
	if to != nil && to.Mode == filemode.Dir {
		subB, fileTo = to.Hash, nil
	}
	if from != nil && from.Mode == filemode.Submodule {
		fileFrom = nil
	}
	if to != nil && to.Mode == filemode.Submodule {
		fileTo = nil
	}
	if err := r.diffFiles(subA, subB, p, out); err != nil {
		return err
	}
	if fileFrom != nil || fileTo != nil {
		*out = append(*out, fileChange{path: p, from: fileFrom, to: fileTo})
	}
	return nil
}

// objectSet collects the objects to send, in insertion order, with the blob
// each new blob replaced at the same path (a delta base the remote has or
// receives in the same pack).
type objectSet struct {
	list []plumbing.Hash
	has  map[plumbing.Hash]bool
	base map[plumbing.Hash]plumbing.Hash
}

func newObjectSet() *objectSet {
	return &objectSet{has: map[plumbing.Hash]bool{}, base: map[plumbing.Hash]plumbing.Hash{}}
}

func (s *objectSet) add(h plumbing.Hash) bool {
	if s.has[h] {
		return false
	}
	s.has[h] = true
	s.list = append(s.list, h)
	return true
}

// collectNew adds tree b and every tree and blob under it that is not at the
// same path in tree a. With a being the parent commit's tree (which the
// remote has, or receives in the same push), this is what the remote lacks.
func (r *Repo) collectNew(a, b plumbing.Hash, set *objectSet) error {
	if a == b || b.IsZero() || !set.add(b) {
		return nil
	}
	ea, err := r.readTree(a)
	if err != nil {
		return err
	}
	eb, err := r.readTree(b)
	if err != nil {
		return err
	}
	byName := make(map[string]object.TreeEntry, len(ea))
	for _, e := range ea {
		byName[e.Name] = e
	}
	for _, e := range eb {
		old, had := byName[e.Name]
		if had && old.Hash == e.Hash {
			continue
		}
		switch e.Mode {
		case filemode.Submodule:
		case filemode.Dir:
			var sub plumbing.Hash
			if had && old.Mode == filemode.Dir {
				sub = old.Hash
			}
			if err := r.collectNew(sub, e.Hash, set); err != nil {
				return err
			}
		default:
			if set.add(e.Hash) && had && old.Mode != filemode.Dir && old.Mode != filemode.Submodule {
				set.base[e.Hash] = old.Hash
			}
		}
	}
	return nil
}
