package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
	"github.com/astra-gitops/astra/internal/sandbox"
)

// astraFiles are the repository paths that decide what runs or hold
// astra's record: no tool writes them. A tool's sandbox leaves them out of
// its view; what a tool changes there anyway (without Landlock) is put
// back: var/ by own, below, the others with the rest of the worktree
// (sortWrites), as no tool may declare them (validate).
var astraFiles = []string{"var", "schedules", "policies", ".github", ".astra.yaml", "CODEOWNERS", "docs/CODEOWNERS"}

// varDir holds astra's record, which astra itself writes while tools run.
const varDir = "var/"

// writableEnv names directories outside the repository every tool may
// write besides its own HOME and TMPDIR (a cache the operator keeps),
// separated as in PATH.
const writableEnv = "ASTRA_SANDBOX_WRITABLE"

// toolView is the sandbox of t's tool: the worktree is writable from tier
// 1 (never in a dry run), less astra's files and the files tools run.
func (r *Runner) toolView(t *task) *sandbox.Policy {
	p := &sandbox.Policy{Repo: r.opts.Root, WriteRepo: t.sched.SafetyTier >= model.TierLocalWrite && !r.opts.DryRun}
	p.Protected = append(p.Protected, astraFiles...)
	p.Protected = append(p.Protected, r.toolFiles(t.tool)...)
	for _, d := range filepath.SplitList(r.opts.Getenv(writableEnv)) {
		if filepath.IsAbs(d) {
			p.Writable = append(p.Writable, d)
		}
	}
	return p
}

// toolFiles are what tools run or load (what their approvals bind), kept
// from the tool self runs: every other tool's files and the directories
// bound whole, and self's own files (a tool may write into its own
// directory, what it declares being its output). Worked out once per run;
// a tool whose files cannot be bound (a symbolic link, too many files) is
// kept as far as it was walked, and its own approval fails on it.
func (r *Runner) toolFiles(self *model.Tool) []string {
	r.toolFilesOnce.Do(func() {
		r.toolFilesOf = map[*model.Tool][2][]string{}
		for _, t := range r.cfg.Policies.Tools {
			files, dirs, _ := approval.ToolFiles(r.opts.Root, t)
			r.toolFilesOf[t] = [2][]string{files, dirs}
		}
	})
	var out []string
	for t, fd := range r.toolFilesOf {
		out = append(out, fd[0]...)
		if t != self {
			out = append(out, fd[1]...)
		}
	}
	return out
}

// own keeps astra's record (var/) astra's while tools run. It knows what
// astra wrote there since its last commit, from the journal: whole files
// (the snapshot's) and members appended (the logs'). A file whose stat no
// write of astra's explains was changed by someone else, a tool: it is put
// back as astra wrote it (the branch tip's bytes and astra's appends since,
// or the whole file astra last wrote), or removed when astra never had it.
// Foreign bytes appended to a log while astra appends to it too are told
// apart by content, not by time.
type own struct {
	before   *gitops.Snapshot  // var/ as astra last left it
	whole    map[string][]byte // files astra wrote whole since its last commit
	appended map[string][]byte // bytes astra appended since its last commit
	dirty    map[string]bool   // after astra's write the size was not what astra wrote: bytes of someone else's are in it
	unknown  map[string]bool   // not as the branch tip had it when watching began: what they should hold is not known
	found    []ownChange       // changes put back (or not), in order
}

type ownChange struct{ path, what string }

// watchOwn starts watching var/. Called with s.mu held, before the first
// watched tool starts.
func (s *session) watchOwn(wt worktreeWatch) *own {
	o := &own{whole: map[string][]byte{}, appended: map[string][]byte{}, dirty: map[string]bool{}, unknown: map[string]bool{}}
	var err error
	if o.before, err = wt.ScanUnder(varDir); err != nil {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("astra's files under var/ are not watched while tools run: %v", err))
		return o
	}
	for _, p := range o.before.Paths() {
		size, _ := o.before.Size(p)
		if committed, ok, err := s.r.git.CommittedFileSize(p); err != nil || !ok || committed != size {
			o.unknown[p] = true
		}
	}
	return o
}

// ownWrote is the journal's observer: astra wrote data to path (whole, or
// appended), leaving it size bytes long, and cut bytes someone else had
// appended.
func (s *session) ownWrote(path string, size int64, data []byte, whole bool, cut int64) {
	o := s.own
	if o == nil || o.before == nil {
		return // no tool has run yet
	}
	if cut > 0 {
		what := fmt.Sprintf("cut %d byte(s) appended after astra's last write", cut)
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("a tool changed %s, astra's own file: %s", path, what))
		o.found = append(o.found, ownChange{path, what})
	}
	if whole {
		o.whole[path] = slices.Clone(data)
	} else if _, ok := o.whole[path]; ok {
		o.whole[path] = append(o.whole[path], data...)
	} else {
		o.appended[path] = append(o.appended[path], data...)
	}
	if fi, err := os.Lstat(filepath.Join(s.r.opts.Root, filepath.FromSlash(path))); err != nil || fi.Size() != size {
		o.dirty[path] = true
	}
	s.r.git.(worktreeWatch).Restamp(o.before, path)
}

// ownCommitted: a commit holds what astra wrote so far, so the branch tip
// is what those files hold now.
func (s *session) ownCommitted(paths []string) {
	o := s.own
	if o == nil || o.before == nil {
		return
	}
	clear(o.whole)
	clear(o.appended)
	for _, p := range paths {
		delete(o.unknown, p)
	}
}

// checkOwn puts back what a tool changed in var/. Called with s.mu held,
// after each watched tool and before each commit while tools run.
func (s *session) checkOwn() {
	o := s.own
	if o == nil || o.before == nil {
		return
	}
	wt := s.r.git.(worktreeWatch)
	changed, err := wt.ChangesUnder(o.before, varDir)
	if err != nil {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("astra's files under var/ could not be checked: %v", err))
		return
	}
	for p := range o.dirty {
		if !slices.Contains(changed, p) {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	for _, p := range changed {
		if slices.Contains(s.touched, p) || slices.Contains(s.marks, p) {
			wt.Restamp(o.before, p) // an approval token or a cancel marker astra wrote
			continue
		}
		what, err := s.putBack(o, wt, p)
		if err != nil {
			what = "not put back: " + err.Error()
			s.report.Errors = append(s.report.Errors, fmt.Sprintf("a tool changed %s, astra's own file, and it could not be put back (%v): restore it with `git checkout` before the next run", p, err))
		} else {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("a tool changed %s, astra's own file: %s", p, what))
		}
		delete(o.dirty, p)
		wt.Restamp(o.before, p)
		o.found = append(o.found, ownChange{p, what})
	}
}

// putBack makes path hold what astra wrote there.
func (s *session) putBack(o *own, wt worktreeWatch, p string) (string, error) {
	if data, ok := o.whole[p]; ok {
		return "put back as astra wrote it", repofs.WriteFile(s.r.opts.Root, p, data)
	}
	appended, wrote := o.appended[p]
	if !o.before.Has(p) && !wrote {
		if err := os.Remove(filepath.Join(s.r.opts.Root, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "removed: astra never wrote it", nil
	}
	if o.unknown[p] {
		return "", errors.New("it was not as astra last committed it when tools started, so what it should hold is not known")
	}
	head, err := s.r.git.Head()
	if err != nil {
		return "", err
	}
	var base []byte
	if head != "" {
		files, err := wt.Files(head, p)
		if err != nil {
			return "", err
		}
		base = files[p]
	}
	return "put back as astra wrote it", repofs.WriteFile(s.r.opts.Root, p, append(slices.Clip(base), appended...))
}
