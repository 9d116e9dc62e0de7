// Package gitops is everything astra does with git: commit the ledger,
// fetch and reset to the remote, push, and park unpushed work on spill refs.
//
// It is built on go-git but avoids go-git's whole-worktree paths (Add,
// Commit, Status) and its push object walk, so that a run costs O(changed
// files), never O(files in the repository):
//
//   - Commit edits only the trees along the given paths, then updates the
//     matching index entries so `git status` stays clean.
//   - Push sends a thin pack: only the objects new since the remote tip, with
//     a grown file (the ledger) sent as a delta against the version the remote
//     already has.
//
// It works in a GitHub Actions checkout (shallow, token in an http
// extraheader), in a full clone, and in a repository without a remote.
//
// The index lock (.git/index.lock) is taken before the branch moves and is
// removed on every error path. A lock someone else left is removed only
// when it is provably stale: no live process has it open (or is git
// working in the checkout; Linux only, through /proc) and it was written
// before this run started. Otherwise the error wraps ErrLocked.
package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"

	"github.com/astra-gitops/astra/internal/errkind"
)

// Defaults applied by Open to empty Options fields.
const (
	DefaultRemote      = "origin"
	DefaultAuthorName  = "github-actions[bot]"
	DefaultAuthorEmail = "41898282+github-actions[bot]@users.noreply.github.com"
)

// SpillPrefix is where PushSpill parks commits that could not be pushed to
// the branch, so that another run (or a person) can recover them.
const SpillPrefix = "refs/heads/astra/spill/"

// Errors callers branch on. Errors returned by this package wrap one of these
// where it applies, so use errors.Is. Some carry their kind (internal/
// errkind) too: ErrRejected and ErrLocked are passing conditions
// (errkind.ErrInfra: a later run gets through), ErrNotRepository and
// ErrProtected are the setup's (errkind.ErrUsage). A remote that cannot be
// reached at all is errkind.ErrInfra as well.
var (
	// ErrRejected: the remote branch moved (non-fast-forward). Sync, re-apply
	// the unpushed events, commit and push again.
	ErrRejected = errkind.Infra(errors.New("push rejected: the remote branch has new commits"))
	// ErrNoRemoteBranch: the remote does not have the branch yet (first run on
	// a new state branch); the first Push creates it.
	ErrNoRemoteBranch = errors.New("the remote does not have the branch yet")
	// ErrNoRemote: the repository has no such remote; astra commits locally only.
	ErrNoRemote = errors.New("no remote configured")
	// ErrAuth: the remote refused our credentials (or we had none).
	ErrAuth = errors.New("authentication failed")
	// ErrLocalChanges: Sync would overwrite uncommitted changes in the worktree.
	ErrLocalChanges = errors.New("uncommitted local changes would be overwritten")
	// ErrNotRepository: the directory is not a git worktree; astra then
	// writes its files without committing them.
	ErrNotRepository = errkind.Usage(errors.New("not a git repository"))
	// ErrLocked: another process holds the checkout's index lock
	// (.git/index.lock); nothing was changed. A lock provably left by a
	// process that is gone is removed instead (see Repo.Warnings).
	ErrLocked = errkind.Infra(errors.New("another astra or git process is using this checkout"))
)

// Options configures Open. Only Dir is required.
type Options struct {
	// Dir is the worktree root (a git top level, not a subdirectory).
	Dir string
	// Remote is the remote name astra syncs with and pushes to; default "origin".
	Remote string
	// Branch is the branch astra commits to and pushes; default: the checked-out
	// branch. A different branch is a "state branch" (for a protected main):
	// then HEAD, the index and the worktree outside Materialize are never touched.
	Branch string
	// AuthorName and AuthorEmail sign astra's commits (author and committer).
	AuthorName  string
	AuthorEmail string
	// Token (GITHUB_TOKEN) authenticates to https remotes as
	// x-access-token:<token>. Without it, an http.<url>.extraheader with
	// "AUTHORIZATION: basic ..." (what actions/checkout writes) is used.
	Token string
	// Now stamps commits; default time.Now. Tests pin it.
	Now func() time.Time
	// Started is when this run started, by the wall clock (it is compared
	// with file times, so never a pinned or simulated clock); default:
	// when Open is called. An index lock written before it that no live
	// process uses was left by a process that is gone, and is removed
	// (see Repo.Warnings).
	Started time.Time
	// Sealing, when set (a sealed ledger), seals every commit astra makes
	// (Commit, PushSpill, PushFiles) and checks the seals NewestSealed
	// and Behind read.
	Sealing *Sealing
	// Timeout bounds one call to the remote (a fetch, a push, a listing);
	// Budget bounds the time all calls of this Repo spend on the remote,
	// retries and their waits included (withRetry). Defaults:
	// DefaultTimeout, DefaultBudget.
	Timeout, Budget time.Duration
}

// Repo is an open repository. It is not safe for concurrent use.
type Repo struct {
	opts       Options
	dir        string // absolute worktree root
	gitDir     string // per-worktree git dir (HEAD, index)
	commonDir  string // shared git dir (objects, refs, config)
	repo       *git.Repository
	st         storage.Storer
	branch     plumbing.ReferenceName
	checkedOut bool // branch is the branch HEAD points to

	remoteURL string               // "" when the remote is not configured
	partial   bool                 // a partial clone: the remote supplies file contents on demand
	auth      transport.AuthMethod // nil for local remotes or no credentials
	secrets   []string             // strings that must never appear in errors

	warnings []string     // see Warnings
	runLock  *os.File     // held by LockRun until the process exits
	netSpent atomic.Int64 // nanoseconds spent on the remote (withRetry)
}

// Open opens the repository whose worktree root is opts.Dir.
func Open(opts Options) (*Repo, error) {
	if opts.Dir == "" {
		opts.Dir = "."
	}
	if opts.Remote == "" {
		opts.Remote = DefaultRemote
	}
	if opts.AuthorName == "" {
		opts.AuthorName = DefaultAuthorName
	}
	if opts.AuthorEmail == "" {
		opts.AuthorEmail = DefaultAuthorEmail
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	repo, err := plainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if _, derr := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true}); derr == nil {
			return nil, fmt.Errorf("%s is inside a git repository but is not its top level: run astra from the repository root", dir)
		}
		return nil, fmt.Errorf("%s: %w: run astra from a clone of the repository that holds schedules/ and var/", dir, ErrNotRepository)
	}
	if err != nil {
		return nil, fmt.Errorf("open git repository %s: %w", dir, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return nil, fmt.Errorf("read %s/.git/config: %w", dir, err)
	}
	if cfg.Core.IsBare {
		return nil, fmt.Errorf("%s is a bare repository: astra needs a checkout with a worktree", dir)
	}
	if cfg.Extensions.ObjectFormat != "" && !strings.EqualFold(string(cfg.Extensions.ObjectFormat), "sha1") {
		return nil, fmt.Errorf("%s uses object format %s: astra supports sha1 repositories only", dir, cfg.Extensions.ObjectFormat)
	}
	gitDir, commonDir, err := gitDirs(dir)
	if err != nil {
		return nil, err
	}

	r := &Repo{opts: opts, dir: dir, gitDir: gitDir, commonDir: commonDir, repo: repo, st: repo.Storer}

	head, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, fmt.Errorf("read HEAD of %s: %w", dir, err)
	}
	var current plumbing.ReferenceName
	if head.Type() == plumbing.SymbolicReference && head.Target().IsBranch() {
		current = head.Target()
	}
	switch {
	case opts.Branch != "":
		r.branch = plumbing.NewBranchReferenceName(opts.Branch)
		if err := r.branch.Validate(); err != nil || strings.HasPrefix(opts.Branch, "refs/") {
			return nil, fmt.Errorf("invalid branch name %q: give a plain branch name such as astra-state", opts.Branch)
		}
	case current != "":
		r.branch = current
	default:
		return nil, fmt.Errorf("HEAD of %s is detached: check out a branch or set the branch astra commits to", dir)
	}
	r.checkedOut = r.branch == current

	if rc, ok := cfg.Remotes[opts.Remote]; ok && len(rc.URLs) > 0 {
		r.remoteURL = rc.URLs[0]
		switch strings.ToLower(cfg.Raw.Section("remote").Subsection(opts.Remote).Option("promisor")) {
		case "true", "yes", "on", "1":
			r.partial = true
		}
		if err := r.setupAuth(); err != nil {
			return nil, err
		}
		if err := r.dropEmptyTrackingRefs(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// gitDirs returns the per-worktree git dir and the common dir of the
// worktree rooted at dir (they differ in linked worktrees).
func gitDirs(dir string) (gitDir, commonDir string, err error) {
	gitDir = filepath.Join(dir, ".git")
	fi, err := os.Stat(gitDir)
	if err != nil {
		return "", "", fmt.Errorf("%s is not a git repository: %w", dir, err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(gitDir)
		if err != nil {
			return "", "", err
		}
		line := strings.TrimSpace(string(b))
		if !strings.HasPrefix(line, "gitdir:") {
			return "", "", fmt.Errorf("%s: not a gitdir file", gitDir)
		}
		gitDir = strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(dir, gitDir)
		}
	}
	commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = strings.TrimSpace(string(b))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
	}
	return filepath.Clean(gitDir), filepath.Clean(commonDir), nil
}

// HasRemote reports whether the configured remote exists; without one astra
// commits locally and never pushes.
func (r *Repo) HasRemote() bool { return r.remoteURL != "" }

// Branch is the short name of the branch astra commits to and pushes.
func (r *Repo) Branch() string { return r.branch.Short() }

// StateBranch reports whether astra's branch is not the checked-out branch
// (so HEAD and the index are left alone and var/ comes from Materialize).
func (r *Repo) StateBranch() bool { return !r.checkedOut }

// Head returns the tip of astra's local branch, or "" when the branch has no
// commit yet.
func (r *Repo) Head() (string, error) {
	h, err := r.tip()
	if err != nil || h.IsZero() {
		return "", err
	}
	return h.String(), nil
}

// TipTime is when the tip of astra's local branch was committed (zero when
// the branch has no commit yet).
func (r *Repo) TipTime() (time.Time, error) {
	h, err := r.tip()
	if err != nil || h.IsZero() {
		return time.Time{}, err
	}
	c, err := r.repo.CommitObject(h)
	if err != nil {
		return time.Time{}, fmt.Errorf("read commit %s: %w", h, err)
	}
	return c.Committer.When.UTC(), nil
}

// tip is the local branch tip, zero when the branch does not exist yet.
func (r *Repo) tip() (plumbing.Hash, error) {
	ref, err := r.st.Reference(r.branch)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", r.branch, err)
	}
	return ref.Hash(), nil
}

// shallow reports whether the clone is shallow (GitHub Actions' depth 1).
func (r *Repo) shallow() (bool, error) {
	s, err := r.st.Shallow()
	return len(s) > 0, err
}
