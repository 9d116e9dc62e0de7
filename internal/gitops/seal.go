package gitops

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Entry is one file of astra's sealed paths in a commit's tree.
type Entry struct {
	Path string // slash path relative to the repository root
	Blob string // the blob's id, hex
}

// Sealing seals the commits astra makes and checks the seals of commits
// it reads (Options.Sealing). Package ledgerkey makes it from the ledger
// key; gitops knows no key and no signature format: it hands over the
// branch, the parent and the tree's files under the sealed paths, and
// appends the trailer line it gets back.
type Sealing struct {
	// Paths are the directories ("var/") or files whose files a seal
	// covers; Except are those among them it leaves out
	// ("var/approvals/pending/"). A directory ends in a slash.
	Paths, Except []string
	// Sign is the trailer line ("Key: value") sealing a commit on branch
	// whose parent is parent ("" for none) and whose tree holds entries
	// (sorted by path) under the sealed paths. Nil when this process does
	// not hold the ledger key: it commits nothing then (ErrNoKey).
	Sign func(branch, parent string, entries []Entry) (string, error)
	// Verify checks the seal in a commit's message against branch, parent
	// ("" for none) and entries; nil when it holds.
	Verify func(branch, parent string, entries []Entry, message string) error
}

// ErrNoKey is wrapped by a commit a sealing Repo cannot seal.
var ErrNoKey = errors.New("astra's commits are sealed (policies list trust.ledger_keys) and astra does not hold the ledger key")

// seal returns msg with the seal of a commit on branch with parent and
// tree appended as its last line; msg as it is when commits are not
// sealed. msg already ends in a newline (withSkipCI).
func (r *Repo) seal(msg, branch string, parent, tree plumbing.Hash) (string, error) {
	s := r.opts.Sealing
	if s == nil {
		return msg, nil
	}
	if s.Sign == nil {
		return "", fmt.Errorf("commit to %s: %w", branch, ErrNoKey)
	}
	entries, err := r.sealedEntries(tree)
	if err != nil {
		return "", err
	}
	line, err := s.Sign(branch, hashString(parent), entries)
	if err != nil {
		return "", fmt.Errorf("sealing a commit to %s: %w", branch, err)
	}
	return msg + line + "\n", nil
}

// hashString is h in hex, "" for the zero hash.
func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// sealedEntries lists the files of tree (zero: none) under the sealed
// paths, sorted by path.
func (r *Repo) sealedEntries(tree plumbing.Hash) ([]Entry, error) {
	var out []Entry
	err := r.eachSealedRoot(tree, func(p string, e *object.TreeEntry) error {
		var files []fileChange
		if e.Mode == filemode.Dir {
			if err := r.diffFiles(plumbing.ZeroHash, e.Hash, p, &files); err != nil {
				return err
			}
		} else {
			files = append(files, fileChange{path: p, to: e})
		}
		for _, f := range files {
			if f.to != nil && r.sealedPath(f.path) {
				out = append(out, Entry{Path: f.path, Blob: f.to.Hash.String()})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// eachSealedRoot calls fn with each of the sealed paths tree has, and its
// entry there (a tree or a file).
func (r *Repo) eachSealedRoot(tree plumbing.Hash, fn func(p string, e *object.TreeEntry) error) error {
	if tree.IsZero() {
		return nil
	}
	t, err := object.GetTree(r.st, tree)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", tree, err)
	}
	for _, root := range r.opts.Sealing.Paths {
		p := strings.TrimSuffix(root, "/")
		e, err := t.FindEntry(p)
		switch {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
			continue
		case err != nil:
			return fmt.Errorf("read %s in tree %s: %w", p, tree, err)
		}
		if err := fn(p, e); err != nil {
			return err
		}
	}
	return nil
}

// sealedPath reports whether file p (under one of the sealed paths) is
// sealed: not under one of Except. Symlinks and submodules are files too.
func (r *Repo) sealedPath(p string) bool {
	for _, x := range r.opts.Sealing.Except {
		if x = strings.TrimSuffix(x, "/"); p == x || strings.HasPrefix(p, x+"/") {
			return false
		}
	}
	return true
}

// sealedChanges lists the sealed files that differ between trees a and b
// (either may be zero), sorted.
func (r *Repo) sealedChanges(a, b plumbing.Hash) ([]string, error) {
	roots := func(tree plumbing.Hash) (map[string]*object.TreeEntry, error) {
		m := map[string]*object.TreeEntry{}
		err := r.eachSealedRoot(tree, func(p string, e *object.TreeEntry) error { m[p] = e; return nil })
		return m, err
	}
	ra, err := roots(a)
	if err != nil {
		return nil, err
	}
	rb, err := roots(b)
	if err != nil {
		return nil, err
	}
	var changes []fileChange
	for _, root := range r.opts.Sealing.Paths {
		p := strings.TrimSuffix(root, "/")
		if err := r.diffEntry(p, ra[p], rb[p], &changes); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, c := range changes {
		if r.sealedPath(c.path) {
			out = append(out, c.path)
		}
	}
	sort.Strings(out)
	return out, nil
}
