package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// RunnerTrailer marks the commits astra makes: every commit message of a
// run carries it (with the runner's id). In a sealed repository the mark
// is the trailer and a seal that verifies, which only the ledger key can
// make; elsewhere it is the trailer alone, which tells astra's commits
// from a person's by accident, not against someone forging it.
const RunnerTrailer = "Astra-Runner"

// LocalWork is work in a checkout that astra did not write and that a
// recording run could drop (a sync moves the branch to the remote's tip)
// or publish (a push sends every commit of the branch).
type LocalWork struct {
	// Commits are the branch's commits the remote-tracking branch lacks
	// that do not carry astra's mark, newest first (Changed is not set).
	Commits []Foreign
	// Files are paths under the prefixes asked about that differ from the
	// checked-out commit: changed, added (untracked) or deleted.
	Files []string
}

// Empty reports whether there is no such work.
func (w LocalWork) Empty() bool { return len(w.Commits) == 0 && len(w.Files) == 0 }

// LocalWork returns what in the checkout is not astra's: the commits of
// astra's branch past its remote-tracking branch without astra's mark
// (none when the tracking branch is unknown: nothing can be dropped from
// or pushed on top of a remote branch astra never saw), and the files
// under prefixes (slash paths: directories or single files) that differ
// from the checked-out commit (untracked files in a directory only when
// they are YAML, what configuration is read from), so that configuration is read from a
// commit and not from edits nobody committed.
func (r *Repo) LocalWork(prefixes []string) (LocalWork, error) {
	var f LocalWork
	var err error
	if f.Commits, err = r.foreignCommits(); err != nil {
		return f, err
	}
	f.Files, err = r.uncommitted(prefixes)
	return f, err
}

// foreignCommits walks astra's branch back to where it meets its
// remote-tracking branch (the tracking branch itself, or where the two
// forked when the remote moved), keeping the commits without astra's mark.
func (r *Repo) foreignCommits() ([]Foreign, error) {
	ref, err := r.st.Reference(plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short()))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tip, err := r.tip()
	if err != nil {
		return nil, err
	}
	base, ok := r.forkPoint(tip, ref.Hash())
	if !ok {
		return nil, nil // not within maxUnpushed commits, or past a shallow boundary: not known
	}
	var out []Foreign
	for h := tip; h != base; {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", h, r.branch.Short(), err)
		}
		mine, err := r.astraWrote(c)
		if err != nil {
			return nil, err
		}
		if !mine {
			out = append(out, Foreign{Commit: h.String(), Author: c.Author.Name + " <" + c.Author.Email + ">", When: c.Author.When.UTC(), Subject: subject(c.Message)})
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return out, nil
}

// forkPoint is the newest commit on both first-parent chains of a and b,
// found by walking both a step at a time, so that it costs the distance
// to it, not the history's length. ok is false when there is none within
// maxUnpushed steps on either side (or the history ends at a shallow
// boundary first).
func (r *Repo) forkPoint(a, b plumbing.Hash) (plumbing.Hash, bool) {
	seenA, seenB := map[plumbing.Hash]bool{}, map[plumbing.Hash]bool{}
	step := func(h plumbing.Hash) plumbing.Hash {
		c, err := object.GetCommit(r.st, h)
		if err != nil || len(c.ParentHashes) == 0 {
			return plumbing.ZeroHash
		}
		return c.ParentHashes[0]
	}
	for n := 0; n <= maxUnpushed && !(a.IsZero() && b.IsZero()); n++ {
		if !a.IsZero() {
			if seenB[a] {
				return a, true
			}
			seenA[a] = true
		}
		if !b.IsZero() {
			if seenA[b] {
				return b, true
			}
			seenB[b] = true
		}
		if !a.IsZero() {
			a = step(a)
		}
		if !b.IsZero() {
			b = step(b)
		}
	}
	return plumbing.ZeroHash, false
}

// astraWrote reports whether commit c carries astra's mark.
func (r *Repo) astraWrote(c *object.Commit) (bool, error) {
	if len(c.ParentHashes) > 1 || !hasTrailer(c.Message, RunnerTrailer) {
		return false, nil // astra never merges
	}
	if r.opts.Sealing == nil || r.opts.Sealing.Verify == nil {
		return true, nil
	}
	ok, _, err := r.verifySeal(c)
	return ok, err
}

// hasTrailer reports whether a line of msg starts with "<key>: ".
func hasTrailer(msg, key string) bool {
	for line := range strings.SplitSeq(msg, "\n") {
		if strings.HasPrefix(line, key+": ") {
			return true
		}
	}
	return false
}

// uncommitted lists the files under prefixes that differ from the commit
// HEAD points to (the checked-out branch's, which is astra's branch unless
// the ledger lives on a state branch). Files a sparse checkout left out
// are not changes.
func (r *Repo) uncommitted(prefixes []string) ([]string, error) {
	head, err := r.repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil // an unborn branch: nothing is committed to compare with
	}
	if err != nil {
		return nil, fmt.Errorf("read HEAD: %w", err)
	}
	c, err := object.GetCommit(r.st, head.Hash())
	if err != nil {
		return nil, fmt.Errorf("read HEAD commit %s: %w", head.Hash(), err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read HEAD tree: %w", err)
	}
	skipped := r.skipWorktree()
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, pre := range prefixes {
		pre = path.Clean(pre)
		// Committed files: changed or deleted.
		err := r.eachCommitted(tree, pre, func(p string, e *object.TreeEntry) error {
			if skipped[p] || r.leftOut(p, e) {
				return nil
			}
			same, err := r.sameAsDisk(p, e)
			if err == nil && !same {
				add(p)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		// Files on disk the commit does not have.
		err = filepath.WalkDir(r.fsPath(pre), func(fp string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(r.dir, fp)
			if err != nil {
				return err
			}
			p := filepath.ToSlash(rel)
			if p != pre && !yamlFile(p) {
				return nil // an untracked file configuration is not read from (notes, an editor's backup)
			}
			if _, err := tree.FindEntry(p); errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
				add(p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func yamlFile(p string) bool {
	ext := path.Ext(p)
	return ext == ".yaml" || ext == ".yml"
}

// eachCommitted calls fn for every file of tree at or under p.
func (r *Repo) eachCommitted(tree *object.Tree, p string, fn func(string, *object.TreeEntry) error) error {
	e, err := tree.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.Mode.IsFile() {
		return fn(p, e)
	}
	sub, err := tree.Tree(p)
	if err != nil {
		return err
	}
	walker := object.NewTreeWalker(sub, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if err != nil {
			break // io.EOF, or a subtree missing from a partial clone
		}
		if entry.Mode.IsFile() {
			if err := fn(p+"/"+name, &entry); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipWorktree is the set of index entries a sparse checkout marked as
// not in the worktree (none when the index cannot be read).
func (r *Repo) skipWorktree() map[string]bool {
	out := map[string]bool{}
	idx, err := r.st.Index()
	if err != nil {
		return out
	}
	for _, e := range idx.Entries {
		if e.SkipWorktree {
			out[e.Name] = true
		}
	}
	return out
}
