package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/astra-gitops/astra/internal/errkind"
)

// SealedWalk is what NewestSealed found on astra's branch.
type SealedWalk struct {
	// Commit is the newest commit whose seal verifies, following first
	// parents from the tip; "" when none does back to the root (a branch
	// astra never sealed, or one whose sealed history was replaced).
	Commit  string
	Entries []Entry // its sealed files
	// After are the commits after it (all of them when Commit is ""),
	// newest first: none when the tip is sealed.
	After []Foreign
	// Changed are the sealed files that differ between the tip and Commit
	// (all of the tip's when Commit is ""): what After changed, all told.
	// Empty: the tip's sealed files are Commit's.
	Changed []string
	// Shallow: the walk stopped at the history's end in a shallow clone
	// without a remote to deepen it from, so Commit may be older than the
	// newest sealed commit (or "" while there is one).
	Shallow bool
}

// Same reports whether the tip's sealed files are the sealed commit's.
func (w *SealedWalk) Same() bool { return w.Commit != "" && len(w.Changed) == 0 }

// Foreign is a commit on astra's branch that is not sealed (or whose seal
// does not verify).
type Foreign struct {
	Commit  string
	Author  string // name <email>
	When    time.Time
	Subject string
	Changed []string // the sealed files it changed against its first parent
}

// deepenSteps are the depths a shallow clone is deepened to, in turn,
// while the walk has not found a sealed commit; the last is all of it.
var deepenSteps = []int{50, 200, 1000, math.MaxInt32}

// NewestSealed walks astra's branch from its tip along first parents to
// the newest commit whose seal verifies (Options.Sealing.Verify), and
// says what the commits after it changed. A shallow clone is deepened
// from the remote in growing steps (50, 200, 1000 commits, then all)
// until the walk finds one or reaches the root. An unborn branch yields
// an empty walk. Failing to reach the remote is an ErrInfra error.
func (r *Repo) NewestSealed(ctx context.Context) (*SealedWalk, error) {
	if r.opts.Sealing == nil || r.opts.Sealing.Verify == nil {
		return nil, errors.New("NewestSealed needs Options.Sealing with Verify")
	}
	w := &SealedWalk{}
	tip, err := r.tip()
	if err != nil || tip.IsZero() {
		return w, err
	}
	steps := deepenSteps
	h := tip
	var tipTree plumbing.Hash
	for {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", h, r.branch.Short(), err)
		}
		if h == tip {
			tipTree = c.TreeHash
		}
		ok, entries, err := r.verifySeal(c)
		if err != nil {
			return nil, err
		}
		if ok {
			w.Commit, w.Entries = h.String(), entries
			w.Changed, err = r.sealedChanges(c.TreeHash, tipTree)
			return w, err
		}
		f := Foreign{Commit: h.String(), Author: c.Author.Name + " <" + c.Author.Email + ">", When: c.Author.When.UTC(), Subject: subject(c.Message)}
		if len(c.ParentHashes) == 0 {
			if f.Changed, err = r.sealedChanges(plumbing.ZeroHash, c.TreeHash); err != nil {
				return nil, err
			}
			w.After = append(w.After, f)
			break
		}
		if !r.hasObject(c.ParentHashes[0]) || r.isShallow(h) {
			if len(steps) == 0 || !r.HasRemote() {
				w.After, w.Shallow = append(w.After, f), true
				break
			}
			if err := r.deepen(ctx, steps[0]); err != nil {
				return nil, err
			}
			steps = steps[1:]
			continue // this commit again, now with its parent
		}
		p, err := object.GetCommit(r.st, c.ParentHashes[0])
		if err != nil {
			return nil, fmt.Errorf("read commit %s of %s: %w", c.ParentHashes[0], r.branch.Short(), err)
		}
		if f.Changed, err = r.sealedChanges(p.TreeHash, c.TreeHash); err != nil {
			return nil, err
		}
		w.After = append(w.After, f)
		h = p.Hash
	}
	w.Changed, err = r.sealedChanges(plumbing.ZeroHash, tipTree)
	return w, err
}

// verifySeal checks the seal of commit c, if its message carries one.
func (r *Repo) verifySeal(c *object.Commit) (bool, []Entry, error) {
	if !strings.Contains(c.Message, ":") { // no trailer at all: not worth listing its files
		return false, nil, nil
	}
	entries, err := r.sealedEntries(c.TreeHash)
	if err != nil {
		return false, nil, err
	}
	var parent plumbing.Hash
	if len(c.ParentHashes) > 0 {
		parent = c.ParentHashes[0]
	}
	return r.opts.Sealing.Verify(r.branch.Short(), hashString(parent), entries, c.Message) == nil, entries, nil
}

func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return s
}

// isShallow reports whether h is a shallow boundary of the clone.
func (r *Repo) isShallow(h plumbing.Hash) bool {
	b, err := r.shallowBoundary()
	return err == nil && b[h]
}

// deepen fetches astra's branch again with depth commits of history.
// go-git records the new shallow boundary but keeps the old one, which
// would still cut the history where it was, so the boundaries whose
// parents are now all here are dropped, as git does.
func (r *Repo) deepen(ctx context.Context, depth int) error {
	remote, err := r.remote()
	if err != nil {
		return err
	}
	tracking := plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short())
	err = r.withRetry(ctx, "deepen from", func(ctx context.Context) error {
		return remote.FetchContext(ctx, &git.FetchOptions{
			RemoteName: r.opts.Remote,
			RefSpecs:   []config.RefSpec{config.RefSpec("+" + r.branch.String() + ":" + tracking.String())},
			Auth:       r.auth,
			Tags:       git.NoTags,
			Depth:      depth,
		})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return errkind.Infra(r.transportError(fmt.Sprintf("deepen the history of %s (to %d commits) from", r.branch.Short(), depth), err))
	}
	shallow, err := r.st.Shallow()
	if err != nil {
		return err
	}
	var keep bytes.Buffer
	for _, s := range shallow {
		if c, err := object.GetCommit(r.st, s); err != nil || !r.allPresent(c.ParentHashes) {
			fmt.Fprintf(&keep, "%s\n", s)
		}
	}
	file := filepath.Join(r.commonDir, "shallow")
	if keep.Len() == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return r.writeLocked(file, keep.Bytes(), nil)
}

func (r *Repo) allPresent(hs []plumbing.Hash) bool {
	for _, h := range hs {
		if !r.hasObject(h) {
			return false
		}
	}
	return true
}
