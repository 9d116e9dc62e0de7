package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
)

// The fakes below stand in for git, GitHub and the tools, in the manner of
// goreleaser's client.Mock: small, in memory, with switches that make one
// call fail. They are pinned to the interfaces the runner declares.
var (
	_ Syncer   = (*fakeGit)(nil)
	_ Forge    = (*fakeForge)(nil)
	_ Executor = (*fakeExec)(nil)
)

// fakeRemote is a branch on a remote: files at a version. A push must be
// based on the current version, as git's compare-and-swap requires.
type fakeRemote struct {
	mu      sync.Mutex
	files   map[string][]byte
	version int
	spills  map[string]map[string][]byte
	// beforePush runs before each push is judged (n counts pushes from 1);
	// a test moves the remote there to make runners race.
	beforePush func(n int)
	pushes     int
	pushErrs   []error // returned by the next pushes, in order
	deleteErr  error   // returned by every spill deletion
}

func newRemote() *fakeRemote {
	return &fakeRemote{files: map[string][]byte{}, spills: map[string]map[string][]byte{}}
}

// advance moves the remote as another runner's unrelated push would.
func (r *fakeRemote) advance() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.version++
}

// fakeGit is one clone: a worktree directory and a local branch.
type fakeGit struct {
	dir       string
	remote    *fakeRemote
	base      int               // remote version the local branch builds on
	local     map[string][]byte // the local branch's files
	commits   []string          // commit messages
	commitErr error
	tracked   map[string][]byte            // the remote's files at the last sync or push
	unpushed  int                          // commits since then
	loose     gitops.Loose                 // what Loose reports
	leftOut   map[string]bool              // files a sparse checkout left out: Drift skips them, as gitops does
	fetched   map[string]map[string][]byte // the remote's files by the tip FetchBranch answered
	fetchHook func(context.Context) error  // runs first in each RemoteTip; its error is the look's
}

func (g *fakeGit) Loose() gitops.Loose { return g.loose }

func newGit(dir string, remote *fakeRemote) *fakeGit {
	remote.mu.Lock()
	defer remote.mu.Unlock()
	return &fakeGit{dir: dir, remote: remote, base: remote.version, local: maps.Clone(remote.files), tracked: maps.Clone(remote.files)}
}

func (g *fakeGit) Commit(msg string, paths ...string) (string, bool, error) {
	if g.commitErr != nil {
		return "", false, g.commitErr
	}
	changed := false
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, ok := g.local[p]; ok {
				delete(g.local, p)
				changed = true
			}
		case err != nil:
			return "", false, err
		case string(g.local[p]) != string(b):
			g.local[p] = b
			changed = true
		}
	}
	if !changed {
		return "", false, nil
	}
	g.commits = append(g.commits, msg)
	g.unpushed++
	return fmt.Sprintf("c%03d", len(g.commits)), true, nil
}

func (g *fakeGit) Push(ctx context.Context) error {
	r := g.remote
	r.mu.Lock()
	r.pushes++
	n, hook := r.pushes, r.beforePush
	r.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pushErrs) > 0 {
		err := r.pushErrs[0]
		r.pushErrs = r.pushErrs[1:]
		if err != nil {
			return err
		}
	}
	if r.version != g.base {
		return fmt.Errorf("push to fake remote: %w", gitops.ErrRejected)
	}
	r.files = maps.Clone(g.local)
	r.version++
	g.base, g.tracked, g.unpushed = r.version, maps.Clone(g.local), 0
	return nil
}

// Sync moves the local branch to the remote's; the worktree follows in
// Materialize, as on a state branch.
func (g *fakeGit) Sync(ctx context.Context) error {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	g.local, g.base = maps.Clone(g.remote.files), g.remote.version
	g.tracked, g.unpushed = maps.Clone(g.remote.files), 0
	return nil
}

// RemoteTip names the remote's version, as a cancel watch asks it.
func (g *fakeGit) RemoteTip(ctx context.Context, branch string) (string, error) {
	if g.fetchHook != nil {
		if err := g.fetchHook(ctx); err != nil {
			return "", err
		}
	}
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	return fmt.Sprintf("v%d", g.remote.version), nil
}

// FetchBranch and Files read the remote's files as of the fetch, beside
// the checkout (a cancel watch).
func (g *fakeGit) FetchBranch(ctx context.Context, branch string) (string, error) {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	if g.fetched == nil {
		g.fetched = map[string]map[string][]byte{}
	}
	tip := fmt.Sprintf("v%d", g.remote.version)
	g.fetched[tip] = maps.Clone(g.remote.files)
	return tip, nil
}

// Files reads a fetched tip's files, or else the local branch's (what
// Head names), at or under paths.
func (g *fakeGit) Files(commit string, paths ...string) (map[string][]byte, error) {
	files, ok := g.fetched[commit]
	if !ok {
		files = g.local
	}
	out := map[string][]byte{}
	for f, b := range files {
		for _, p := range paths {
			if f == p || strings.HasSuffix(p, "/") && strings.HasPrefix(f, p) {
				out[f] = b
			}
		}
	}
	return out, nil
}

func (g *fakeGit) Materialize(prefix string) error {
	root := filepath.Join(g.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	if strings.HasSuffix(prefix, "/") {
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	} else if err := os.Remove(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for p, b := range g.local {
		if p != prefix && !strings.HasPrefix(p, prefix) {
			continue
		}
		full := filepath.Join(g.dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (g *fakeGit) PushSpill(ctx context.Context, name string, files map[string][]byte, msg string) error {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	g.remote.spills[name] = maps.Clone(files)
	return nil
}

func (g *fakeGit) ListSpills(ctx context.Context) ([]string, error) {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	var out []string
	for n := range g.remote.spills {
		out = append(out, n)
	}
	return out, nil
}

func (g *fakeGit) ReadSpill(ctx context.Context, name string) (map[string][]byte, error) {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	return maps.Clone(g.remote.spills[name]), nil
}

func (g *fakeGit) KeepSpill(ctx context.Context, name, _ string) error {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	if g.remote.deleteErr != nil {
		return g.remote.deleteErr
	}
	delete(g.remote.spills, name)
	return nil
}

func (g *fakeGit) CommittedFileSize(path string) (int64, bool, error) {
	b, ok := g.local[path]
	return int64(len(b)), ok, nil
}

func (g *fakeGit) RemoteFileSize(path string) (int64, bool, error) {
	g.remote.mu.Lock()
	defer g.remote.mu.Unlock()
	b, ok := g.tracked[path]
	return int64(len(b)), ok, nil
}

func (g *fakeGit) CommitMessages(limit int) ([]gitops.CommitMessage, error) {
	var out []gitops.CommitMessage
	for i := len(g.commits) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, gitops.CommitMessage{Commit: fmt.Sprintf("c%03d", i+1), Message: g.commits[i]})
	}
	return out, nil
}

func (g *fakeGit) Warnings() []string { return nil }

func (g *fakeGit) Branch() string { return "main" }

func (g *fakeGit) Head() (string, error) {
	if len(g.commits) == 0 {
		return "", nil
	}
	return fmt.Sprintf("c%03d", len(g.commits)), nil
}

func (g *fakeGit) HeadHas(path string) (bool, error) { return false, nil }

func (g *fakeGit) LockRun() (func(), error) { return func() {}, nil }

func (g *fakeGit) Unpushed() (int, bool, error) { return g.unpushed, true, nil }

// Drift compares the worktree with the local branch's files, as the real
// one does (without an index: a shorter file is Behind).
func (g *fakeGit) Drift(prefix string) (gitops.Drift, error) {
	var d gitops.Drift
	seen := map[string]bool{}
	for p, want := range g.local {
		if p != prefix && !strings.HasPrefix(p, prefix) || g.leftOut[p] {
			continue
		}
		seen[p] = true
		disk, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist), err == nil && len(disk) < len(want) && strings.HasPrefix(string(want), string(disk)):
			d.Behind = append(d.Behind, p)
		case err != nil:
			return d, err
		case len(disk) == len(want):
		case strings.HasPrefix(string(disk), string(want)):
			d.Ahead = append(d.Ahead, p)
		default:
			d.Other = append(d.Other, p)
		}
	}
	root := filepath.Join(g.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	err := filepath.WalkDir(root, func(abs string, de fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || de.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(g.dir, abs)
		if rel = filepath.ToSlash(rel); !seen[rel] {
			d.Ahead = append(d.Ahead, rel)
		}
		return nil
	})
	return d, err
}

// fakeForge is GitHub's side of approvals: pull requests by number.
type fakeForge struct {
	mu        sync.Mutex
	prs       map[int]*forge.PR
	tokens    map[int][]byte // the token file each PR's branch holds
	requests  []forge.ApprovalRequest
	closed    []int
	approvers map[string]bool
	// Errors returned instead of an answer.
	ensureErr   error
	prErr       map[int]error
	closeErr    error
	approverErr error
	fileErr     error
	filesErr    error
	files       map[int][]forge.PRFile // what a pull request changes, when not only its token
	merged      map[string][]byte      // token bytes at each merge commit
	reviewers   []string               // whose review was requested
	reviewErr   error                  // RequestReviewers fails with it
	reviews     map[int][]forge.Review // each pull request's reviews, oldest first
	reviewsErr  error                  // PullRequestReviews fails with it
	reviewsThen map[int][]forge.Review // after the first read of a pull request's reviews, they are these
}

func newForge() *fakeForge {
	return &fakeForge{prs: map[int]*forge.PR{}, tokens: map[int][]byte{}, prErr: map[int]error{}, approvers: map[string]bool{}, merged: map[string][]byte{}, files: map[int][]forge.PRFile{}}
}

func (f *fakeForge) EnsureApprovalPR(ctx context.Context, req forge.ApprovalRequest) (forge.PR, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ensureErr != nil {
		return forge.PR{}, false, f.ensureErr
	}
	f.requests = append(f.requests, req)
	for n, pr := range f.prs {
		if pr.State == "open" && pr.HeadRef == forge.ApprovalBranch(req.ScheduleID) {
			f.tokens[n] = req.Token(n)
			pr.HeadSHA = fmt.Sprintf("head-%d-%d", n, len(f.requests)) // the token commit astra pushed
			return *pr, false, nil
		}
	}
	n := len(f.prs) + 1
	pr := &forge.PR{Number: n, URL: fmt.Sprintf("https://github.example/pull/%d", n), State: "open", HeadRef: forge.ApprovalBranch(req.ScheduleID),
		HeadSHA: fmt.Sprintf("head-%d-%d", n, len(f.requests))}
	f.prs[n] = pr
	f.tokens[n] = req.Token(n)
	return *pr, true, nil
}

func (f *fakeForge) RequestReviewers(ctx context.Context, number int, members []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reviewErr != nil {
		return f.reviewErr
	}
	f.reviewers = append(f.reviewers, members...)
	return nil
}

func (f *fakeForge) PullRequestReviews(ctx context.Context, number int) ([]forge.Review, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reviewsErr != nil {
		return nil, f.reviewsErr
	}
	rs := f.reviews[number]
	if then, ok := f.reviewsThen[number]; ok {
		f.reviews[number] = then
		delete(f.reviewsThen, number)
	}
	return rs, nil
}

// review is login reviewing pull request n's current head (state
// APPROVED, CHANGES_REQUESTED, COMMENTED or DISMISSED).
func (f *fakeForge) review(n int, login, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reviews == nil {
		f.reviews = map[int][]forge.Review{}
	}
	f.reviews[n] = append(f.reviews[n], forge.Review{ID: int64(len(f.reviews[n]) + 1), User: login, State: state, CommitID: f.prs[n].HeadSHA})
}

func (f *fakeForge) PullRequest(ctx context.Context, number int) (forge.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.prErr[number]; err != nil {
		return forge.PR{}, err
	}
	pr, ok := f.prs[number]
	if !ok {
		return forge.PR{}, fmt.Errorf("read pull request #%d: %w", number, forge.ErrNotFound)
	}
	return *pr, nil
}

// PullRequestFiles lists what each pull request's branch changed: its
// token file, unless a test says otherwise (files).
func (f *fakeForge) PullRequestFiles(ctx context.Context, number int) ([]forge.PRFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.filesErr; err != nil {
		return nil, err
	}
	if files, ok := f.files[number]; ok {
		return files, nil
	}
	for _, req := range f.requests {
		if pr := f.prs[number]; pr != nil && pr.HeadRef == forge.ApprovalBranch(req.ScheduleID) {
			return []forge.PRFile{{Path: req.Path, Status: "added", SHA: "blob"}}, nil
		}
	}
	return nil, nil
}

func (f *fakeForge) ClosePullRequest(ctx context.Context, number int, comment string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closeErr != nil {
		return f.closeErr
	}
	pr := f.prs[number]
	if pr == nil {
		return fmt.Errorf("close pull request #%d: %w", number, forge.ErrNotFound)
	}
	if pr.Merged {
		return fmt.Errorf("close pull request #%d: %w", number, forge.ErrMerged)
	}
	pr.State = "closed"
	f.closed = append(f.closed, number)
	return nil
}

func (f *fakeForge) IsApprover(ctx context.Context, login string, allowed []string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.approverErr != nil {
		return false, f.approverErr
	}
	return f.approvers[login], nil
}

func (f *fakeForge) FileAt(ctx context.Context, ref, path string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fileErr != nil {
		return nil, f.fileErr
	}
	b, ok := f.merged[ref]
	if !ok {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, forge.ErrNotFound)
	}
	return b, nil
}

// merge is a human merging PR n: the token lands in the clone at dir.
func (f *fakeForge) merge(t *testing.T, n int, by, dir, scheduleID string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	pr := f.prs[n]
	pr.State, pr.Merged, pr.MergedBy = "closed", true, by
	pr.MergeCommitSHA = fmt.Sprintf("merge-%d", n)
	f.merged[pr.MergeCommitSHA] = f.tokens[n]
	p := filepath.Join(dir, filepath.FromSlash("var/approvals/pending/"+scheduleID+".token"))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, f.tokens[n], 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeExec is the tools: it records what ran and answers with result.
type fakeExec struct {
	mu     sync.Mutex
	ran    []executor.Request
	result func(req executor.Request) executor.Result
	// running, when set, answers instead of result, under the run's
	// context: a tool that runs until it is stopped.
	running func(ctx context.Context, req executor.Request) executor.Result
}

func (e *fakeExec) Run(ctx context.Context, req executor.Request) executor.Result {
	e.mu.Lock()
	e.ran = append(e.ran, req)
	f, running := e.result, e.running
	e.mu.Unlock()
	if running != nil {
		return running(ctx, req)
	}
	if f != nil {
		return f(req)
	}
	if req.DryRun {
		return executor.Result{Status: "dry_run"}
	}
	return executor.Result{Status: executor.StatusOK, Output: "ok"}
}

func (e *fakeExec) runs(scheduleID string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.ran {
		if r.ScheduleID == scheduleID && !r.DryRun {
			n++
		}
	}
	return n
}

// env is one test's repository: configuration files in a directory.
type env struct {
	t      *testing.T
	dir    string
	cfg    *model.Config
	remote *fakeRemote
	git    *fakeGit
	forge  *fakeForge
	exec   *fakeExec
	sleeps []time.Duration
	secret []byte // ASTRA_APPROVAL_SECRET
}

const testPolicies = `tools:
  work: {kind: exec, command: [./t.sh], tier: local_write, capabilities: [w]}
  ship: {kind: exec, command: [./t.sh], tier: external}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
roles:
  founder: [octocat]
permissions:
  approve: [founder]
task_policies:
  - {task_type: ship, auto_execute: false, approver_role: founder}
trust:
  accept_risk: these tests exercise runs and approvals, not the repository's setup (posture_test.go does)
`

// newEnv writes schedules (YAML) and the test policies into a fresh
// directory, loads them, and wires a fake remote, GitHub and tools.
func newEnv(t *testing.T, schedules string) *env {
	t.Helper()
	dir := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("schedules/s.yaml", schedules)
	write("policies/p.yaml", testPolicies)
	write("t.sh", "#!/bin/sh\n")
	cfg, diags, err := config.Load(dir)
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("config: %v %v", err, diags)
	}
	remote := newRemote()
	return &env{t: t, dir: dir, cfg: cfg, remote: remote, git: newGit(dir, remote), forge: newForge(), exec: &fakeExec{}}
}

// clone is a second runner's checkout of the same remote and repository.
func (e *env) clone() *env {
	e.t.Helper()
	dir := e.t.TempDir()
	for _, p := range []string{"schedules/s.yaml", "policies/p.yaml", "t.sh"} {
		b, err := os.ReadFile(filepath.Join(e.dir, p))
		if err != nil {
			e.t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	c := &env{t: e.t, dir: dir, cfg: e.cfg, remote: e.remote, git: newGit(dir, e.remote), forge: e.forge, exec: e.exec, secret: e.secret}
	if err := c.git.Materialize("var/"); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// runner returns a runner at now; mods adjust its options.
func (e *env) runner(now string, mods ...func(*Options)) *Runner {
	e.t.Helper()
	at, err := time.Parse(time.RFC3339, now)
	if err != nil {
		e.t.Fatal(err)
	}
	opts := Options{Root: e.dir, Clock: func() time.Time { return at }, RunnerID: "test", Secret: e.secret,
		Sleep: func(_ context.Context, d time.Duration) error { e.sleeps = append(e.sleeps, d); return nil }}
	for _, m := range mods {
		m(&opts)
	}
	var f Forge
	if e.forge != nil {
		f = e.forge
	}
	return New(e.cfg, opts, e.exec, e.git, f)
}

// runDue runs `astra run-due` at now and fails the test on an error.
func (e *env) runDue(now string, mods ...func(*Options)) *Report {
	e.t.Helper()
	rep, err := e.runner(now, mods...).RunDue(context.Background())
	if err != nil {
		e.t.Fatalf("run-due at %s: %v", now, err)
	}
	return rep
}

// events reads the ledger as the remote has it.
func (e *env) events() []ledger.Event {
	e.t.Helper()
	c := e.clone()
	var out []ledger.Event
	store := ledger.Open(c.dir, 0)
	segs, err := store.Segments()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := ledger.Scan(c.dir, segs, ledger.ScanOptions{Verify: true}, func(ev *ledger.Event) error {
		out = append(out, *ev)
		return nil
	}); err != nil {
		e.t.Fatalf("remote ledger: %v", err)
	}
	return out
}

// count counts the remote ledger's events of kind (for a schedule, when
// id is not "").
func (e *env) count(kind ledger.Kind, id string) int {
	n := 0
	for _, ev := range e.events() {
		if ev.Event == kind && (id == "" || ev.ScheduleID == id) {
			n++
		}
	}
	return n
}

// outcome finds the outcome of a schedule in a report.
func outcome(t *testing.T, rep *Report, id string) *Outcome {
	t.Helper()
	for _, o := range rep.Outcomes {
		if o.ScheduleID == id {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %+v", id, rep.Outcomes)
	return nil
}

// ownerIdentity is octocat, verified: the founder of the test policies.
func ownerIdentity() identity.Identity {
	return identity.Identity{Login: "octocat", Source: identity.SourceGitConfig, Verified: true}
}
