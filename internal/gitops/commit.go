package gitops

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// skipCI is added to every commit message so astra's own pushes never
// trigger workflows (spec: "Concurrency and git").
const skipCI = "[skip ci]"

// Commit records exactly the given worktree paths (added, modified or deleted
// on disk; relative to the worktree root) as one commit on top of astra's
// branch. Only the trees along those paths are read and written: no status
// scan, no hashing of other files. When the branch is checked out, the index
// entries of those paths are updated too so `git status` stays clean; in
// state-branch mode HEAD and the index are not touched. The message gets
// "[skip ci]" appended unless it has it, and with Options.Sealing the
// seal's trailer line after it. changed is false (and hash the current
// tip) when the files already match the tip.
//
// The index lock is taken before the branch moves: when another process
// holds it the error wraps ErrLocked and nothing is committed. Only when
// writing the index fails after the commit is made are hash and changed
// returned with the error.
func (r *Repo) Commit(msg string, paths ...string) (hash string, changed bool, err error) {
	if len(paths) == 0 {
		return "", false, errors.New("commit: no paths given")
	}
	seen := map[string]bool{}
	var files []diskFile
	for _, p := range paths {
		cp, err := r.cleanPath(p)
		if err != nil {
			return "", false, err
		}
		if seen[cp] {
			continue
		}
		seen[cp] = true
		f, err := r.storeFile(cp)
		if err != nil {
			return "", false, fmt.Errorf("commit %s: %w", cp, err)
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })

	parent, err := r.tip()
	if err != nil {
		return "", false, err
	}
	var parentTree plumbing.Hash
	if !parent.IsZero() {
		c, err := object.GetCommit(r.st, parent)
		if err != nil {
			return "", false, fmt.Errorf("read %s tip %s: %w", r.branch.Short(), parent, err)
		}
		parentTree = c.TreeHash
	}
	edits := make(map[string]edit, len(files))
	for _, f := range files {
		edits[f.path] = edit{hash: f.hash, mode: f.mode, del: f.absent}
	}
	tree, err := r.editTree(parentTree, edits)
	if err != nil {
		return "", false, fmt.Errorf("commit: %w", err)
	}
	if tree.IsZero() {
		if parent.IsZero() {
			return "", false, nil // nothing on an unborn branch, nothing added
		}
		if tree, err = r.emptyTree(); err != nil {
			return "", false, err
		}
	}
	if tree == parentTree {
		return parent.String(), false, nil
	}

	// Take the index lock before the branch moves, as git does: a checkout
	// another process is using gets no commit, rather than a commit and
	// an index that does not match it.
	var lock *indexLock
	if r.checkedOut {
		if lock, err = r.lockIndex(); err != nil {
			return "", false, fmt.Errorf("commit: nothing was committed: %w", err)
		}
		defer lock.release()
	}
	if msg, err = r.seal(withSkipCI(msg), r.branch.Short(), parent, tree); err != nil {
		return "", false, err
	}
	now := r.opts.Now()
	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: now}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := r.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", false, err
	}
	h, err := r.st.SetEncodedObject(obj)
	if err != nil {
		return "", false, err
	}
	if err := r.moveBranch(parent, h); err != nil {
		return "", false, err
	}
	if lock != nil {
		if err := r.updateIndex(lock, files); err != nil {
			return h.String(), true, fmt.Errorf("commit %.12s is on %s, but %w: `git status` shows the committed files as changed until `git reset` rebuilds the index",
				h, r.branch.Short(), err)
		}
	}
	return h.String(), true, nil
}

// moveBranch sets the local branch to h if it still points at old (zero: the
// branch did not exist), so a concurrent writer is detected rather than lost.
func (r *Repo) moveBranch(old, h plumbing.Hash) error {
	if err := r.setRef(r.branch, h, &old); err != nil {
		return fmt.Errorf("update %s: %w", r.branch, err)
	}
	return nil
}

// withSkipCI appends the skip-ci marker unless the message carries one.
func withSkipCI(msg string) string {
	msg = strings.TrimRight(msg, "\n")
	lower := strings.ToLower(msg)
	for _, m := range []string{"[skip ci]", "[ci skip]", "[no ci]", "[skip actions]", "[actions skip]"} {
		if strings.Contains(lower, m) {
			return msg + "\n"
		}
	}
	if msg == "" {
		return skipCI + "\n"
	}
	return msg + "\n\n" + skipCI + "\n"
}
