package gitops

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitMessage is one commit of astra's branch.
type CommitMessage struct {
	Commit  string // full hash
	Message string
}

// CommitMessages returns the messages of the last limit commits of astra's
// branch, newest first, following first parents: the line of commits
// astra made, not what was merged into it. A shallow clone yields what it
// has (one commit in a depth-1 checkout); an unborn branch yields none.
func (r *Repo) CommitMessages(limit int) ([]CommitMessage, error) {
	n := 0
	return r.CommitMessagesUntil(func(CommitMessage) bool { n++; return n >= limit })
}

// CommitMessagesUntil is CommitMessages up to and including the first
// commit stop accepts (or the root, or a shallow clone's boundary). The
// ledger reads its head anchors from these.
func (r *Repo) CommitMessagesUntil(stop func(CommitMessage) bool) ([]CommitMessage, error) {
	h, err := r.tip()
	if err != nil {
		return nil, err
	}
	boundary, err := r.shallowBoundary()
	if err != nil {
		return nil, err
	}
	var out []CommitMessage
	for !h.IsZero() {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", h, r.branch.Short(), err)
		}
		m := CommitMessage{Commit: h.String(), Message: c.Message}
		out = append(out, m)
		if stop(m) || boundary[h] || len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return out, nil
}

// CommittedFileSize is the size of the file at path (slash, relative to the
// worktree root) in the tip of astra's branch; ok is false when the branch
// or the file does not exist.
func (r *Repo) CommittedFileSize(path string) (size int64, ok bool, err error) {
	return r.fileSize(r.branch, path)
}

// RemoteFileSize is the size of the file at path in the remote-tracking
// branch (refs/remotes/<remote>/<branch>, as of the last fetch or push):
// how much of it the remote already has. ok is false when there is no
// tracking branch or it lacks the file.
func (r *Repo) RemoteFileSize(path string) (size int64, ok bool, err error) {
	return r.fileSize(plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short()), path)
}

func (r *Repo) fileSize(ref plumbing.ReferenceName, path string) (int64, bool, error) {
	p, err := r.cleanPath(path)
	if err != nil {
		return 0, false, err
	}
	rf, err := r.st.Reference(ref)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", ref, err)
	}
	c, err := object.GetCommit(r.st, rf.Hash())
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", ref.Short(), err)
	}
	t, err := c.Tree()
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", ref.Short(), err)
	}
	e, err := t.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s in %s: %w", p, ref.Short(), err)
	}
	if !e.Mode.IsFile() {
		return 0, false, nil
	}
	size, err := r.st.EncodedObjectSize(e.Hash)
	if err != nil {
		return 0, false, fmt.Errorf("read %s in %s: %w", p, ref.Short(), err)
	}
	return size, true, nil
}

// Change is the commit that last changed a path.
type Change struct {
	Commit string // full hash
	Author string // the author's name
	Email  string // and email
	When   time.Time
	// Shallow: the checkout's history ends at this commit (a depth-1
	// clone), so the change is in it or in a commit before it.
	Shallow bool
}

// LastChanges finds, for each path (a file or a directory; absent counts
// as a version), the newest commit whose version of it differs from its
// first parent's, following first parents from commit from (the one the
// schedules and policies were read from; "" is HEAD, the checkout). One
// walk serves every path and reads at most limit commits, and only the
// trees along the paths in each; a path not changed within them is left
// out of the result.
func (r *Repo) LastChanges(from string, paths []string, limit int) (map[string]Change, error) {
	out := map[string]Change{}
	cur := map[string]plumbing.Hash{} // the version of each path still sought, at c
	for _, path := range paths {
		p, err := r.cleanPath(path)
		if err != nil {
			return nil, err
		}
		cur[p] = plumbing.ZeroHash
	}
	start := plumbing.NewHash(from)
	if from == "" {
		head, err := r.repo.Head()
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			return out, nil // unborn: nothing committed yet
		}
		if err != nil {
			return nil, fmt.Errorf("read HEAD: %w", err)
		}
		start = head.Hash()
	}
	boundary, err := r.shallowBoundary()
	if err != nil {
		return nil, err
	}
	c, err := object.GetCommit(r.st, start)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", start, err)
	}
	for p := range cur {
		if cur[p], err = r.versionAt(c, p); err != nil {
			return nil, err
		}
	}
	for range limit {
		if len(cur) == 0 {
			break
		}
		found := Change{Commit: c.Hash.String(), Author: c.Author.Name, Email: c.Author.Email, When: c.Author.When.UTC()}
		if len(c.ParentHashes) == 0 {
			for p, v := range cur {
				if !v.IsZero() { // the root commit added it
					out[p] = found
				}
			}
			break
		}
		parent, err := object.GetCommit(r.st, c.ParentHashes[0])
		if boundary[c.Hash] || errors.Is(err, plumbing.ErrObjectNotFound) {
			found.Shallow = true
			for p := range cur {
				out[p] = found
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", c.ParentHashes[0], err)
		}
		for p, v := range cur {
			prev, err := r.versionAt(parent, p)
			if err != nil {
				return nil, err
			}
			if prev != v {
				out[p] = found
				delete(cur, p)
			}
		}
		c = parent
	}
	return out, nil
}

// versionAt is the hash of path's blob or tree in commit c; zero when the
// commit has no such path.
func (r *Repo) versionAt(c *object.Commit, p string) (plumbing.Hash, error) {
	t, err := object.GetTree(r.st, c.TreeHash)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	e, err := t.FindEntry(p)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s in %s: %w", p, c.Hash, err)
	}
	return e.Hash, nil
}

// shallowBoundary is the set of commits a shallow clone has without their
// parents.
func (r *Repo) shallowBoundary() (map[plumbing.Hash]bool, error) {
	shallow, err := r.st.Shallow()
	if err != nil {
		return nil, err
	}
	boundary := map[plumbing.Hash]bool{}
	for _, s := range shallow {
		boundary[s] = true
	}
	return boundary, nil
}

// CheckoutHead is the commit checked out (HEAD), where schedules and
// policies are read; "" before the first commit.
func (r *Repo) CheckoutHead() (string, error) {
	head, err := r.repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	return head.Hash().String(), nil
}
