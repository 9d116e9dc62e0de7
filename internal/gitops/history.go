package gitops

import (
	"errors"
	"fmt"

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
// The ledger reads its head anchors from these.
func (r *Repo) CommitMessages(limit int) ([]CommitMessage, error) {
	h, err := r.tip()
	if err != nil {
		return nil, err
	}
	shallow, err := r.st.Shallow()
	if err != nil {
		return nil, err
	}
	boundary := map[plumbing.Hash]bool{}
	for _, s := range shallow {
		boundary[s] = true
	}
	var out []CommitMessage
	for !h.IsZero() && len(out) < limit {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", h, r.branch.Short(), err)
		}
		out = append(out, CommitMessage{Commit: h.String(), Message: c.Message})
		if boundary[h] || len(c.ParentHashes) == 0 {
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
