package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// receiveSession is an open push connection with the remote's refs.
type receiveSession struct {
	sess transport.ReceivePackSession
	ar   *packp.AdvRefs
	refs map[plumbing.ReferenceName]plumbing.Hash
}

func (r *Repo) requireRemote() error {
	if r.HasRemote() {
		return nil
	}
	return r.fail(ErrNoRemote, fmt.Sprintf("remote %q is not configured", r.opts.Remote), nil,
		"add it with `git remote add` or run without pushing")
}

func (r *Repo) openReceive(ctx context.Context) (*receiveSession, error) {
	if err := r.requireRemote(); err != nil {
		return nil, err
	}
	ep, err := transport.NewEndpoint(r.remoteURL)
	if err != nil {
		return nil, r.fail(nil, "invalid URL for remote "+r.opts.Remote, err, "")
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, r.transportError("push to", err)
	}
	sess, err := cl.NewReceivePackSession(ep, r.auth)
	if err != nil {
		return nil, r.transportError("push to", err)
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		_ = sess.Close()
		return nil, r.transportError("push to", err)
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, h := range ar.References {
		refs[plumbing.ReferenceName(name)] = h
	}
	return &receiveSession{sess: sess, ar: ar, refs: refs}, nil
}

// Push pushes astra's branch to the remote, sending only the objects the
// remote lacks (a thin pack). It works from shallow clones. When the remote
// branch has commits this clone does not have, the error wraps ErrRejected:
// Sync, re-apply, commit and push again. Other failures (auth, network,
// branch protection) name the remote and what to check.
//
// A push whose answer was lost (a reset, a timeout) is tried again within
// the budget (withRetry); the next attempt sees the remote's refs first,
// so a push that did land is taken as done, never counted as lost.
func (r *Repo) Push(ctx context.Context) error {
	return r.withRetry(ctx, "push to", r.pushOnce)
}

func (r *Repo) pushOnce(ctx context.Context) error {
	local, err := r.tip()
	if err != nil {
		return err
	}
	if local.IsZero() {
		return fmt.Errorf("push: branch %s has no commits yet", r.branch.Short())
	}
	rs, err := r.openReceive(ctx)
	if err != nil {
		return err
	}
	defer rs.sess.Close()
	old := rs.refs[r.branch]
	tracking := plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short())
	if old == local { // pushed before, by a run killed before it noted so
		return r.setRef(tracking, local, nil)
	}
	if !old.IsZero() && r.st.HasEncodedObject(old) != nil {
		return r.rejected(old)
	}
	set, err := r.objectsToPush(local, old, rs.refs)
	if err != nil {
		return err
	}
	if err := r.send(ctx, rs, &packp.Command{Name: r.branch, Old: old, New: local}, set); err != nil {
		return err
	}
	// Record what the remote now has, as git push does (git status then
	// says "up to date with origin/<branch>").
	return r.setRef(tracking, local, nil)
}

func (r *Repo) rejected(remoteTip plumbing.Hash) error {
	return r.fail(ErrRejected, fmt.Sprintf("push to %s rejected: remote %s has new commits (now at %.12s)",
		r.opts.Remote, r.branch.Short(), remoteTip), nil, "sync, re-apply and push again")
}

// objectsToPush lists the commits, trees and blobs reachable from local that
// the remote lacks, given the remote's tip old (zero: the branch is new) and
// its other refs. astra's history on top of the remote tip is a chain of
// single-parent commits, so it walks that chain and diffs each commit's tree
// against its parent's: O(changed paths). A local history with merges falls
// back to go-git's full object walk.
func (r *Repo) objectsToPush(local, old plumbing.Hash, remoteRefs map[plumbing.ReferenceName]plumbing.Hash) (*objectSet, error) {
	known := map[plumbing.Hash]bool{} // commits the remote has
	if !old.IsZero() {
		known[old] = true
	} else {
		for _, h := range remoteRefs {
			known[h] = true
		}
	}
	shallow, err := r.st.Shallow()
	if err != nil {
		return nil, err
	}
	for _, h := range shallow {
		known[h] = true // a shallow boundary came from the remote
	}

	var chain []*object.Commit
	base := plumbing.ZeroHash
	for h := local; ; {
		if known[h] {
			base = h
			break
		}
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", h, err)
		}
		chain = append(chain, c)
		if len(c.ParentHashes) == 0 {
			break
		}
		if len(c.ParentHashes) > 1 {
			return r.objectsToPushSlow(local, old, remoteRefs, shallow)
		}
		h = c.ParentHashes[0]
	}
	if !old.IsZero() && base != old {
		return nil, r.rejected(old)
	}
	set := newObjectSet()
	parentTree := plumbing.ZeroHash
	if !base.IsZero() {
		c, err := object.GetCommit(r.st, base)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", base, err)
		}
		parentTree = c.TreeHash
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		set.add(c.Hash)
		if err := r.collectNew(parentTree, c.TreeHash, set); err != nil {
			return nil, err
		}
		parentTree = c.TreeHash
	}
	return set, nil
}

// objectsToPushSlow handles histories with merges: a fast-forward check by
// ancestry and go-git's reachability walk (O(history), but only reached when
// the local branch has unpushed merges, which astra never makes).
func (r *Repo) objectsToPushSlow(local, old plumbing.Hash, remoteRefs map[plumbing.ReferenceName]plumbing.Hash, shallow []plumbing.Hash) (*objectSet, error) {
	if !old.IsZero() {
		lc, err := object.GetCommit(r.st, local)
		if err != nil {
			return nil, err
		}
		oc, err := object.GetCommit(r.st, old)
		if err != nil {
			return nil, r.rejected(old)
		}
		ok, err := oc.IsAncestor(lc)
		if err != nil || !ok {
			return nil, r.rejected(old)
		}
	}
	haves := append([]plumbing.Hash(nil), shallow...)
	for _, h := range remoteRefs {
		if r.st.HasEncodedObject(h) == nil {
			haves = append(haves, h)
		}
	}
	hashes, err := revlist.Objects(r.st, []plumbing.Hash{local}, haves)
	if err != nil {
		return nil, fmt.Errorf("list objects to push: %w", err)
	}
	set := newObjectSet()
	for _, h := range hashes {
		set.add(h)
	}
	return set, nil
}

// send performs one ref update on an open session, streaming the pack of set
// (nil for a deletion), and interprets the remote's report.
func (r *Repo) send(ctx context.Context, rs *receiveSession, cmd *packp.Command, set *objectSet) error {
	req := packp.NewReferenceUpdateRequestFromCapabilities(rs.ar.Capabilities)
	req.Commands = []*packp.Command{cmd}
	var said remoteText
	said.listen(req, rs.ar.Capabilities)
	done := make(chan error, 1)
	if set != nil {
		thin := !rs.ar.Capabilities.Supports(capability.Capability("no-thin"))
		pr, pw := io.Pipe()
		req.Packfile = pr
		go func() {
			err := r.writePack(pw, set, thin)
			pw.CloseWithError(err)
			done <- err
		}()
	} else {
		close(done)
	}
	report, err := rs.sess.ReceivePack(ctx, req)
	if req.Packfile != nil {
		_ = req.Packfile.Close() // unblock the writer if the remote stopped reading
	}
	if perr := <-done; perr != nil && err == nil {
		return r.fail(nil, "push: build pack", perr, "")
	}
	// go-git returns the remote's report together with an error when a ref
	// update failed: read the report first, it tells a lost race apart.
	if report == nil {
		if err != nil {
			return r.transportError("push to", err)
		}
		return nil // the remote does not report status; it took the pack
	}
	if report.UnpackStatus != "ok" {
		return r.fail(nil, fmt.Sprintf("push to %s: the remote could not store the pack: %s", r.opts.Remote, report.UnpackStatus), nil,
			"check the remote's disk space and logs")
	}
	for _, st := range report.CommandStatuses {
		if st.Status == "ok" {
			continue
		}
		if isProtected(st.Status, &said) { // before races: a retry cannot help
			return r.fail(ErrProtected, fmt.Sprintf("push to %s refused: %s is a protected branch (%s)%s",
				r.opts.Remote, st.ReferenceName.Short(), st.Status, said.quote()), nil, "")
		}
		if isRaceStatus(st.Status) {
			return r.fail(ErrRejected, fmt.Sprintf("push to %s rejected: remote %s moved while pushing (%s)",
				r.opts.Remote, st.ReferenceName.Short(), st.Status), nil, "sync, re-apply and push again")
		}
		return r.fail(nil, fmt.Sprintf("push to %s refused %s: %s%s", r.opts.Remote, st.ReferenceName.Short(), st.Status, said.quote()), nil,
			"if the branch is protected, let astra use a state branch (set its branch option) or allow the token to push")
	}
	if err != nil {
		return r.transportError("push to", err)
	}
	return nil
}

// isRaceStatus recognises ref-update failures that mean "someone else
// updated the ref first", which a retry after Sync fixes.
func isRaceStatus(s string) bool {
	s = strings.ToLower(s)
	for _, m := range []string{"non-fast-forward", "fetch first", "stale info", "failed to lock", "cannot lock", "failed to update ref", "already exists"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// Sync fetches astra's branch from the remote (depth 1 when the clone is
// shallow) and moves the local branch to the remote tip, discarding local
// commits the remote does not have; the caller re-applies its own changes.
// When the branch is checked out, files that differ between the old and new
// tips are updated in the worktree and the index (like `git reset --keep`),
// and Sync refuses with ErrLocalChanges rather than overwrite uncommitted
// edits. ErrNoRemoteBranch: the remote has no such branch; the local branch
// stays as it is.
func (r *Repo) Sync(ctx context.Context) error {
	if err := r.requireRemote(); err != nil {
		return err
	}
	tracking := plumbing.NewRemoteReferenceName(r.opts.Remote, r.branch.Short())
	remoteTip, err := r.fetch(ctx, r.branch, tracking)
	if err != nil {
		return err
	}
	local, err := r.tip()
	if err != nil {
		return err
	}
	if local == remoteTip {
		return nil
	}
	if !r.checkedOut {
		return r.moveBranch(local, remoteTip)
	}
	return r.checkout(local, remoteTip)
}

// fetch brings remote ref src into local ref dst and returns its hash.
func (r *Repo) fetch(ctx context.Context, src, dst plumbing.ReferenceName) (plumbing.Hash, error) {
	remote, err := r.remote()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	shallow, err := r.shallow()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	opts := &git.FetchOptions{
		RemoteName: r.opts.Remote,
		RefSpecs:   []config.RefSpec{config.RefSpec("+" + src.String() + ":" + dst.String())},
		Auth:       r.auth,
		Tags:       git.NoTags,
	}
	if shallow && !r.partial {
		// Stay shallow: astra needs the tip, not the history. (A partial
		// clone does not: a depth-1 fetch would bring the whole tip's
		// content, every file the clone left out, where a plain fetch
		// brings what changed since the commits it has.)
		opts.Depth = 1
	}
	err = r.withRetry(ctx, "fetch from", func(ctx context.Context) error { return remote.FetchContext(ctx, opts) })
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil || errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.As(err, &noMatch) || errors.Is(err, transport.ErrEmptyRemoteRepository):
		return plumbing.ZeroHash, r.fail(ErrNoRemoteBranch, fmt.Sprintf("%s has no %s yet", r.opts.Remote, src.Short()), nil, "the first push creates it")
	default:
		return plumbing.ZeroHash, r.transportError("fetch from", err)
	}
	ref, err := r.st.Reference(dst)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s after fetch: %w", dst, err)
	}
	return ref.Hash(), nil
}

// checkout moves the checked-out branch from old to tip and updates the
// worktree files and index entries that differ between the two, refusing when
// one of them holds uncommitted changes.
func (r *Repo) checkout(old, tip plumbing.Hash) error {
	oldTree, err := r.commitTree(old)
	if err != nil {
		return err
	}
	newTree, err := r.commitTree(tip)
	if err != nil {
		return err
	}
	var changes []fileChange
	if err := r.diffFiles(oldTree, newTree, "", &changes); err != nil {
		return err
	}
	var dirty []string
	changes = slices.DeleteFunc(changes, func(c fileChange) bool { return r.leftOut(c.path, c.from) })
	for _, c := range changes {
		same, err := r.sameAsDisk(c.path, c.from)
		if err != nil {
			return err
		}
		if !same {
			if done, err := r.sameAsDisk(c.path, c.to); err != nil || !done {
				dirty = append(dirty, c.path)
			}
		}
	}
	if len(dirty) > 0 {
		sort.Strings(dirty)
		return r.fail(ErrLocalChanges, "sync "+r.branch.Short()+": uncommitted changes to "+strings.Join(dirty, ", "), nil,
			"commit or stash them, or run astra in a clean checkout")
	}
	// The index lock first: a checkout another process is using is left as
	// it is, branch included.
	lock, err := r.lockIndex()
	if err != nil {
		return fmt.Errorf("sync %s: nothing was changed: %w", r.branch.Short(), err)
	}
	defer lock.release()
	if err := r.moveBranch(old, tip); err != nil {
		return err
	}
	files := make([]diskFile, 0, len(changes))
	for _, c := range changes { // deletions first: a file may replace a directory
		if c.to == nil {
			if err := r.removeWorktreeFile(c.path); err != nil {
				return r.partialCheckout(err)
			}
			files = append(files, diskFile{path: c.path, absent: true})
		}
	}
	for _, c := range changes {
		if c.to != nil {
			f, err := r.writeWorktreeFile(c.path, c.to)
			if err != nil {
				return r.partialCheckout(err)
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil
	}
	if err := r.updateIndex(lock, files); err != nil {
		return r.partialCheckout(err)
	}
	return nil
}

func (r *Repo) partialCheckout(err error) error {
	return fmt.Errorf("sync moved %s but could not update the worktree (run `git status`, then `git checkout HEAD -- <path>` for the files listed): %w", r.branch.Short(), err)
}

// commitTree returns the tree of commit h; zero for zero.
func (r *Repo) commitTree(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
	}
	return c.TreeHash, nil
}

var spillName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func spillRef(name string) (plumbing.ReferenceName, error) {
	if !spillName.MatchString(name) || strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return "", fmt.Errorf("invalid spill name %q: use letters, digits, '.', '_' and '-'", name)
	}
	return plumbing.ReferenceName(SpillPrefix + name), nil
}

// PushSpill pushes files (slash paths to contents) as one parentless commit
// to a new ref refs/heads/astra/spill/<name>, so that work a run could not
// push to the branch is not lost; with Options.Sealing the commit is
// sealed for branch astra/spill/<name>. The name must be unique: an
// existing spill of that name is an error (wrapping ErrRejected).
func (r *Repo) PushSpill(ctx context.Context, name string, files map[string][]byte, msg string) error {
	ref, err := spillRef(name)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("push spill: no files")
	}
	edits := make(map[string]edit, len(files))
	for p, data := range files {
		cp, err := r.cleanPath(p)
		if err != nil {
			return err
		}
		h, err := r.storeBlob(data)
		if err != nil {
			return err
		}
		edits[cp] = edit{hash: h, mode: filemode.Regular}
	}
	tree, err := r.editTree(plumbing.ZeroHash, edits)
	if err != nil {
		return err
	}
	if msg, err = r.seal(withSkipCI(msg), strings.TrimPrefix(ref.String(), "refs/heads/"), plumbing.ZeroHash, tree); err != nil {
		return err
	}
	sig := object.Signature{Name: r.opts.AuthorName, Email: r.opts.AuthorEmail, When: r.opts.Now()}
	obj := r.st.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}).Encode(obj); err != nil {
		return err
	}
	commit, err := r.st.SetEncodedObject(obj)
	if err != nil {
		return err
	}
	return r.withRetry(ctx, "push a spill to", func(ctx context.Context) error {
		rs, err := r.openReceive(ctx)
		if err != nil {
			return err
		}
		defer rs.sess.Close()
		if h, ok := rs.refs[ref]; ok {
			if h == commit {
				return nil // an earlier attempt's, whose answer was lost
			}
			return r.fail(ErrRejected, "spill "+name+" already exists on "+r.opts.Remote, nil, "use a unique name")
		}
		set := newObjectSet()
		set.add(commit)
		if err := r.collectNew(plumbing.ZeroHash, tree, set); err != nil {
			return err
		}
		return r.send(ctx, rs, &packp.Command{Name: ref, New: commit}, set)
	})
}

// ListSpills returns the names of the spill refs on the remote, sorted.
func (r *Repo) ListSpills(ctx context.Context) ([]string, error) {
	refs, err := r.listRemote(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ref := range refs {
		if n, ok := strings.CutPrefix(ref.Name().String(), SpillPrefix); ok && ref.Type() == plumbing.HashReference {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// listRemote returns the refs the remote advertises (git ls-remote); none
// for an empty remote.
func (r *Repo) listRemote(ctx context.Context) ([]*plumbing.Reference, error) {
	if err := r.requireRemote(); err != nil {
		return nil, err
	}
	remote, err := r.repo.Remote(r.opts.Remote)
	if err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	err = r.withRetry(ctx, "list refs of", func(ctx context.Context) (err error) {
		refs, err = remote.ListContext(ctx, &git.ListOptions{Auth: r.auth})
		return err
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, r.transportError("list refs of", err)
	}
	return refs, nil
}

// ReadSpill fetches spill <name> and returns its files.
func (r *Repo) ReadSpill(ctx context.Context, name string) (map[string][]byte, error) {
	ref, err := spillRef(name)
	if err != nil {
		return nil, err
	}
	if err := r.requireRemote(); err != nil {
		return nil, err
	}
	h, err := r.fetch(ctx, ref, plumbing.NewRemoteReferenceName(r.opts.Remote, strings.TrimPrefix(ref.String(), "refs/heads/")))
	if errors.Is(err, ErrNoRemoteBranch) {
		return nil, r.fail(nil, "spill "+name+" not found on "+r.opts.Remote, nil, "list them with ListSpills")
	}
	if err != nil {
		return nil, err
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil, err
	}
	var changes []fileChange
	if err := r.diffFiles(plumbing.ZeroHash, c.TreeHash, "", &changes); err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(changes))
	for _, ch := range changes {
		obj, err := r.st.EncodedObject(plumbing.BlobObject, ch.to.Hash)
		if err != nil {
			return nil, err
		}
		if files[ch.path], err = readObject(obj); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Where KeepSpill moves a spill a run is done with: under a name no run
// lists again, kept for whoever wants to see what it held.
const (
	SpillMerged  = "refs/heads/astra/spill-merged/"
	SpillRefused = "refs/heads/astra/spill-refused/"
)

// KeepSpill moves spill name to prefix+name on the remote (prefix
// SpillMerged or SpillRefused), never deleting what it held: the new ref
// is made first, then the spill's removed. A spill already gone is
// nothing to do.
func (r *Repo) KeepSpill(ctx context.Context, name, prefix string) error {
	ref, err := spillRef(name)
	if err != nil {
		return err
	}
	if prefix != SpillMerged && prefix != SpillRefused {
		return fmt.Errorf("keep spill %s: %q is not a place for spills", name, prefix)
	}
	rs, err := r.openReceive(ctx)
	if err != nil {
		return err
	}
	old, ok := rs.refs[ref]
	to := plumbing.ReferenceName(prefix + name)
	_, kept := rs.refs[to]
	if ok && !kept {
		err = r.send(ctx, rs, &packp.Command{Name: to, Old: plumbing.ZeroHash, New: old}, newObjectSet()) // the remote has the objects: an empty pack
	}
	rs.sess.Close()
	if err != nil || !ok {
		return err
	}
	return r.DeleteSpill(ctx, name)
}

// DeleteSpill removes spill <name> from the remote (after its content was
// recovered); deleting a spill that does not exist is not an error.
func (r *Repo) DeleteSpill(ctx context.Context, name string) error {
	ref, err := spillRef(name)
	if err != nil {
		return err
	}
	err = r.withRetry(ctx, "delete a spill on", func(ctx context.Context) error {
		rs, err := r.openReceive(ctx)
		if err != nil {
			return err
		}
		defer rs.sess.Close()
		if old, ok := rs.refs[ref]; ok {
			return r.send(ctx, rs, &packp.Command{Name: ref, Old: old, New: plumbing.ZeroHash}, nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	tracking := plumbing.NewRemoteReferenceName(r.opts.Remote, strings.TrimPrefix(ref.String(), "refs/heads/"))
	if err := r.st.RemoveReference(tracking); err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return err
	}
	return nil
}
