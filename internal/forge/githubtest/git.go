package githubtest

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The bare repository is the source of truth for branches and file contents.
// Every handler opens it afresh (git.PlainOpen is cheap), so pushes made by
// other processes (git CLI, go-git) between requests are always seen.

// entry is one non-directory tree entry, keyed by its full slash path.
type entry struct {
	Hash plumbing.Hash
	Mode filemode.FileMode
}

type files map[string]entry

var errConflict = errors.New("merge conflict")

func (s *Server) open() (*git.Repository, error) {
	return git.PlainOpen(s.dir)
}

// branchTip returns the commit a branch points at, or ZeroHash if the branch
// does not exist.
func branchTip(repo *git.Repository, branch string) (plumbing.Hash, error) {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return ref.Hash(), nil
}

// resolveRef resolves what the contents API accepts as ?ref=: a branch name,
// refs/heads/<b>, a tag, or a full commit SHA.
func resolveRef(repo *git.Repository, ref string) (plumbing.Hash, bool) {
	names := []plumbing.ReferenceName{
		plumbing.ReferenceName(ref),
		plumbing.NewBranchReferenceName(ref),
		plumbing.NewTagReferenceName(ref),
	}
	for _, n := range names {
		if !strings.HasPrefix(n.String(), "refs/") {
			continue
		}
		if r, err := repo.Reference(n, true); err == nil {
			h := r.Hash()
			if tag, err := repo.TagObject(h); err == nil { // annotated tag
				h = tag.Target
			}
			return h, true
		}
	}
	if plumbing.IsHash(ref) {
		h := plumbing.NewHash(ref)
		if _, err := repo.CommitObject(h); err == nil {
			return h, true
		}
	}
	return plumbing.ZeroHash, false
}

// flatten lists every non-directory entry reachable from a commit's tree.
func flatten(repo *git.Repository, commit plumbing.Hash) (files, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	out := files{}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Mode == filemode.Dir {
			continue
		}
		out[name] = entry{Hash: e.Hash, Mode: e.Mode}
	}
}

func writeBlob(repo *git.Repository, data []byte) (plumbing.Hash, error) {
	obj := repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

func readBlob(repo *git.Repository, h plumbing.Hash) ([]byte, error) {
	b, err := repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// writeTree stores the nested trees for a flat file map and returns the root
// tree hash. A path that is both a file and a directory is a conflict.
func writeTree(repo *git.Repository, fs files) (plumbing.Hash, error) {
	type node struct {
		file  *entry
		child files
	}
	level := map[string]*node{}
	for p, e := range fs {
		head, rest, nested := strings.Cut(p, "/")
		n := level[head]
		if n == nil {
			n = &node{}
			level[head] = n
		}
		if nested {
			if n.file != nil {
				return plumbing.ZeroHash, errConflict
			}
			if n.child == nil {
				n.child = files{}
			}
			n.child[rest] = e
		} else {
			if n.child != nil {
				return plumbing.ZeroHash, errConflict
			}
			e := e
			n.file = &e
		}
	}
	var t object.Tree
	for name, n := range level {
		if n.file != nil {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: n.file.Mode, Hash: n.file.Hash})
			continue
		}
		h, err := writeTree(repo, n.child)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// Git orders tree entries by name, comparing a directory as name + "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	obj := repo.Storer.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

func writeCommit(repo *git.Repository, tree plumbing.Hash, parents []plumbing.Hash, msg string, author, committer object.Signature) (plumbing.Hash, error) {
	c := &object.Commit{
		Author:       author,
		Committer:    committer,
		Message:      msg,
		TreeHash:     tree,
		ParentHashes: parents,
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

// setBranch moves a branch with compare-and-swap semantics: old is the hash
// the branch must still point at (ZeroHash: it must not exist).
func setBranch(repo *git.Repository, branch string, newHash, old plumbing.Hash) error {
	name := plumbing.NewBranchReferenceName(branch)
	ref := plumbing.NewHashReference(name, newHash)
	if old.IsZero() {
		if _, err := repo.Reference(name, false); err == nil {
			return fmt.Errorf("branch %s already exists", branch)
		}
		return repo.Storer.SetReference(ref)
	}
	return repo.Storer.CheckAndSetReference(ref, plumbing.NewHashReference(name, old))
}

// commitFiles commits changes (path -> content; nil content deletes) on top
// of parent and returns the new commit.
func commitFiles(repo *git.Repository, parent plumbing.Hash, changes map[string][]byte, msg string, author, committer object.Signature) (plumbing.Hash, error) {
	fs := files{}
	var parents []plumbing.Hash
	if !parent.IsZero() {
		var err error
		if fs, err = flatten(repo, parent); err != nil {
			return plumbing.ZeroHash, err
		}
		parents = []plumbing.Hash{parent}
	}
	for p, data := range changes {
		if data == nil {
			delete(fs, p)
			continue
		}
		h, err := writeBlob(repo, data)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		mode := filemode.Regular
		if old, ok := fs[p]; ok && old.Mode == filemode.Executable {
			mode = old.Mode
		}
		fs[p] = entry{Hash: h, Mode: mode}
	}
	tree, err := writeTree(repo, fs)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return writeCommit(repo, tree, parents, msg, author, committer)
}

// mergeFiles is a three-way merge at file granularity: a path changed on only
// one side takes that side; changed identically on both sides is fine;
// changed differently on both sides is a conflict. (Git would try a line
// merge inside the file; GitHub would then report the PR as mergeable. The
// fake is stricter, which is what tests of "not mergeable" want.)
func mergeFiles(repo *git.Repository, base, ours, theirs plumbing.Hash) (files, error) {
	var b files
	if !base.IsZero() {
		var err error
		if b, err = flatten(repo, base); err != nil {
			return nil, err
		}
	}
	o, err := flatten(repo, ours)
	if err != nil {
		return nil, err
	}
	t, err := flatten(repo, theirs)
	if err != nil {
		return nil, err
	}
	out := files{}
	seen := map[string]bool{}
	for _, m := range []files{b, o, t} {
		for p := range m {
			if seen[p] {
				continue
			}
			seen[p] = true
			be, bok := b[p]
			oe, ook := o[p]
			te, tok := t[p]
			same := func(e1 entry, ok1 bool, e2 entry, ok2 bool) bool { return ok1 == ok2 && e1 == e2 }
			var e entry
			var ok bool
			switch {
			case same(te, tok, be, bok):
				e, ok = oe, ook
			case same(oe, ook, be, bok):
				e, ok = te, tok
			case same(oe, ook, te, tok):
				e, ok = oe, ook
			default:
				return nil, errConflict
			}
			if ok {
				out[p] = e
			}
		}
	}
	return out, nil
}

// mergeBase returns the best common ancestor of a and b (ZeroHash if none).
func mergeBase(repo *git.Repository, a, b plumbing.Hash) (plumbing.Hash, error) {
	ca, err := repo.CommitObject(a)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	cb, err := repo.CommitObject(b)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if len(bases) == 0 {
		return plumbing.ZeroHash, nil
	}
	return bases[0].Hash, nil
}

// isAncestor reports whether a is b or an ancestor of b.
func isAncestor(repo *git.Repository, a, b plumbing.Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	ca, err := repo.CommitObject(a)
	if err != nil {
		return false, err
	}
	cb, err := repo.CommitObject(b)
	if err != nil {
		return false, err
	}
	return ca.IsAncestor(cb)
}

// mergedTree computes (without moving any ref) the tree a merge of head into
// base would produce; errConflict when it cannot be merged.
func mergedTree(repo *git.Repository, baseTip, headTip plumbing.Hash) (plumbing.Hash, error) {
	mb, err := mergeBase(repo, baseTip, headTip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	fs, err := mergeFiles(repo, mb, baseTip, headTip)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return writeTree(repo, fs)
}

func signature(login string, when time.Time) object.Signature {
	return object.Signature{Name: login, Email: noreplyEmail(login), When: when}
}

func noreplyEmail(login string) string {
	return login + "@users.noreply.github.com"
}

// diffStats is how a pull request's head differs from its base.
type diffStats struct{ commits, additions, deletions, files int }

// compare counts the commits on head since its merge base with base, and
// the files and lines changed from the merge base to head.
func compare(repo *git.Repository, base, head plumbing.Hash) (*diffStats, error) {
	mb, err := mergeBase(repo, base, head)
	if err != nil {
		return nil, err
	}
	hc, err := repo.CommitObject(head)
	if err != nil {
		return nil, err
	}
	from, seen := &object.Tree{}, map[plumbing.Hash]bool{}
	if !mb.IsZero() {
		mc, err := repo.CommitObject(mb)
		if err != nil {
			return nil, err
		}
		if from, err = mc.Tree(); err != nil {
			return nil, err
		}
		err = object.NewCommitPreorderIter(mc, nil, nil).ForEach(func(c *object.Commit) error {
			seen[c.Hash] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	st := &diffStats{}
	err = object.NewCommitPreorderIter(hc, seen, nil).ForEach(func(*object.Commit) error {
		st.commits++
		return nil
	})
	if err != nil {
		return nil, err
	}
	to, err := hc.Tree()
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return nil, err
	}
	patch, err := changes.Patch()
	if err != nil {
		return nil, err
	}
	for _, fs := range patch.Stats() {
		st.files++
		st.additions += fs.Addition
		st.deletions += fs.Deletion
	}
	return st, nil
}
