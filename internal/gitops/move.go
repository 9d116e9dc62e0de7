package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
)

// This file works on branches of the remote as a whole, for moving the
// ledger between them: it reads and writes commits and refs only, never
// a local branch, the index or the worktree.

// FetchBranch fetches branch from the remote into its remote-tracking ref
// and returns its tip, or "" when the remote has no such branch.
func (r *Repo) FetchBranch(ctx context.Context, branch string) (string, error) {
	ref, err := branchRef(branch)
	if err != nil {
		return "", err
	}
	if err := r.requireRemote(); err != nil {
		return "", err
	}
	h, err := r.fetch(ctx, ref, plumbing.NewRemoteReferenceName(r.opts.Remote, branch))
	if errors.Is(err, ErrNoRemoteBranch) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// RemoteTip asks the remote for branch's tip without fetching (git
// ls-remote): "" when the remote has no such branch. Under a Watch
// context it writes nothing of the Repo or the local repository, so it
// needs no lock against a commit or push beside it.
func (r *Repo) RemoteTip(ctx context.Context, branch string) (string, error) {
	ref, err := branchRef(branch)
	if err != nil {
		return "", err
	}
	refs, err := r.listRemote(ctx)
	if err != nil {
		return "", err
	}
	for _, x := range refs {
		if x.Name() == ref && x.Type() == plumbing.HashReference {
			return x.Hash().String(), nil
		}
	}
	return "", nil
}

// Files returns the files at or under paths (a directory such as "var/memory/",
// or a file) in commit, by slash path. Paths commit does not have are
// skipped.
func (r *Repo) Files(commit string, paths ...string) (map[string][]byte, error) {
	changes, err := r.filesAt(plumbing.NewHash(commit), paths)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(changes))
	for _, c := range changes {
		obj, err := r.st.EncodedObject(plumbing.BlobObject, c.to.Hash)
		if err != nil {
			return nil, fmt.Errorf("read %s in %.12s: %w", c.path, commit, err)
		}
		if out[c.path], err = readObject(obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RemoteFiles returns the files at or under paths on the branch astra
// commits to as the remote had it at the last fetch or push (its
// remote-tracking branch), by slash path; none before the first fetch.
// It is how a run sees what was pushed to the branch beside the checkout
// (a signed approval token), without moving the checkout.
func (r *Repo) RemoteFiles(paths ...string) (map[string][]byte, error) {
	ref, err := r.st.Reference(plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short()))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.Files(ref.Hash().String(), paths...)
}

// filesAt lists the files at or under paths in commit h (none for the zero
// hash), as changes from nothing.
func (r *Repo) filesAt(h plumbing.Hash, paths []string) ([]fileChange, error) {
	if h.IsZero() {
		return nil, nil
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var out []fileChange
	for _, p := range paths {
		cp, err := r.cleanPath(p)
		if err != nil {
			return nil, err
		}
		e, err := t.FindEntry(cp)
		switch {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		case err != nil:
			return nil, fmt.Errorf("read %s in %.12s: %w", cp, h, err)
		case e.Mode == filemode.Dir:
			if err := r.diffFiles(plumbing.ZeroHash, e.Hash, cp, &out); err != nil {
				return nil, err
			}
		case e.Mode.IsFile():
			out = append(out, fileChange{path: cp, to: e})
		}
	}
	return out, nil
}

// PushFiles makes a commit on top of parent ("" for a new branch without
// history) in which the files at or under paths are exactly files (files
// there that files lacks are removed; everything outside paths is
// parent's), and pushes it to branch only while the remote's branch is
// still at parent: a compare-and-swap that fails with ErrRejected when it
// moved (or, for "", exists). Local branches, the index and the worktree
// are left alone. With Options.Sealing the commit is sealed for branch.
// It returns the new commit.
func (r *Repo) PushFiles(ctx context.Context, branch, parent string, paths []string, files map[string][]byte, msg string) (string, error) {
	ref, err := branchRef(branch)
	if err != nil {
		return "", err
	}
	var base, baseTree plumbing.Hash
	if parent != "" {
		base = plumbing.NewHash(parent)
		if baseTree, err = r.commitTree(base); err != nil {
			return "", err
		}
	}
	edits := map[string]edit{}
	old, err := r.filesAt(base, paths)
	if err != nil {
		return "", err
	}
	for _, c := range old {
		edits[c.path] = edit{del: true}
	}
	for p, data := range files {
		cp, err := r.cleanPath(p)
		if err != nil {
			return "", err
		}
		if !underPaths(cp, paths) {
			return "", fmt.Errorf("push files: %s is not under %s", cp, strings.Join(paths, ", "))
		}
		h, err := r.storeBlob(data)
		if err != nil {
			return "", err
		}
		edits[cp] = edit{hash: h, mode: filemode.Regular}
	}
	tree, err := r.editTree(baseTree, edits)
	if err == nil && tree.IsZero() {
		tree, err = r.emptyTree()
	}
	if err != nil {
		return "", fmt.Errorf("push files: %w", err)
	}
	if msg, err = r.seal(withSkipCI(msg), branch, base, tree); err != nil {
		return "", err
	}
	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !base.IsZero() {
		c.ParentHashes = []plumbing.Hash{base}
	}
	obj := r.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", err
	}
	commit, err := r.st.SetEncodedObject(obj)
	if err != nil {
		return "", err
	}
	err = r.withRetry(ctx, "push to", func(ctx context.Context) error {
		rs, err := r.openReceive(ctx)
		if err != nil {
			return err
		}
		defer rs.sess.Close()
		switch now := rs.refs[ref]; {
		case now == commit:
			return nil // an earlier attempt's, whose answer was lost
		case now != base && base.IsZero():
			return r.fail(ErrRejected, fmt.Sprintf("%s already has a branch %s (at %.12s)", r.opts.Remote, branch, now), nil, "")
		case now != base:
			return r.fail(ErrRejected, fmt.Sprintf("%s moved on %s (now at %.12s, not %.12s)", branch, r.opts.Remote, now, base), nil, "")
		}
		set, err := r.objectsToPush(commit, base, rs.refs)
		if err != nil {
			return err
		}
		return r.send(ctx, rs, &packp.Command{Name: ref, Old: base, New: commit}, set)
	})
	if err != nil {
		return "", err
	}
	tracking := plumbing.NewRemoteReferenceName(r.opts.Remote, branch)
	return commit.String(), r.setRef(tracking, commit, nil)
}

// HeadHas reports whether the commit checked out (HEAD) has path, a file
// or a directory; false on an unborn branch.
func (r *Repo) HeadHas(path string) (bool, error) {
	p, err := r.cleanPath(path)
	if err != nil {
		return false, err
	}
	head, err := r.repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read HEAD: %w", err)
	}
	c, err := object.GetCommit(r.st, head.Hash())
	if err != nil {
		return false, fmt.Errorf("read HEAD: %w", err)
	}
	t, err := c.Tree()
	if err != nil {
		return false, err
	}
	_, err = t.FindEntry(p)
	switch {
	case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s in HEAD: %w", p, err)
	}
	return true, nil
}

func branchRef(branch string) (plumbing.ReferenceName, error) {
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil || branch == "" || strings.HasPrefix(branch, "refs/") {
		return "", fmt.Errorf("invalid branch name %q: give a plain branch name such as astra-state", branch)
	}
	return ref, nil
}

// underPaths reports whether clean path p is one of paths or under one of
// the directories among them.
func underPaths(p string, paths []string) bool {
	for _, q := range paths {
		q = strings.TrimSuffix(q, "/")
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}
