package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/model"
)

// What exec tools write in the worktree. The worktree is scanned before
// and after each one runs (a stat per file, git-ignored files left out);
// what changed under the tool's writes: globs is committed with the run's
// outcome, anything else it changed is put back as git has it before the
// next tool runs, or reported when git cannot tell what it held. astra's
// own record (var/) is watched apart (ownfiles.go): astra writes there
// while tools run.

// worktreeWatch is git's view of the worktree (gitops.Repo). Without it
// (no git), tools' writes are neither watched nor committed.
type worktreeWatch interface {
	Scan(skip ...string) (*gitops.Snapshot, error)
	Changes(before *gitops.Snapshot, skip ...string) ([]string, error)
	Restore(before *gitops.Snapshot, paths []string) (restored []string, kept map[string]string, err error)
	ScanUnder(prefix string) (*gitops.Snapshot, error)
	ChangesUnder(before *gitops.Snapshot, prefix string) ([]string, error)
	Restamp(s *gitops.Snapshot, paths ...string)
	Files(commit string, paths ...string) (map[string][]byte, error)
}

// maxListedWrites bounds each list in a run's WritesDetail.
const maxListedWrites = 50

// WritesDetail is the Detail of a run's outcome (run.completed or
// run.failed) when its tool changed files in the worktree.
type WritesDetail struct {
	// Writes changed under the tool's writes: globs; committed with the
	// outcome when the run completed, left in the worktree when it failed.
	Writes []string `json:"writes,omitempty"`
	// Undeclared changed outside them, never committed: each was put back
	// (Reverted) or could not be (NotReverted, with why: what it held
	// before the tool ran is in no commit).
	Undeclared  []string          `json:"undeclared,omitempty"`
	Reverted    []string          `json:"reverted,omitempty"`
	NotReverted map[string]string `json:"not_reverted,omitempty"`
	// AstraFiles are files of astra's record (var/) changed by a tool
	// while this one ran, and what astra did about each.
	AstraFiles map[string]string `json:"astra_files,omitempty"`
	More       int               `json:"more,omitempty"` // paths beyond the lists' bound
}

// writeLog is what this run's tools wrote (guarded by session.mu).
type writeLog struct {
	files   []string               // declared writes of completed runs: committed with the ledger
	running map[*task]*watch       // exec tools being watched now
	detail  map[*task]WritesDetail // for each run's outcome event
}

// add lists paths among the writes to commit, each once. The list only
// grows (by append, never reordered in place): publish and keepWrites read
// it while a resync puts the same paths back.
func (l *writeLog) add(paths ...string) {
	for _, p := range paths {
		if !slices.Contains(l.files, p) {
			l.files = append(l.files, p)
		}
	}
}

// watch is one tool's view of the worktree before it ran.
type watch struct {
	before *gitops.Snapshot
	// overlap: exec tools that ran at the same time, whose declared
	// writes a change may be rather than an undeclared one of this tool.
	overlap []*task
	// ownFrom: the changes of astra's files found before this tool ran.
	ownFrom int
}

// watchWrites scans the worktree before t's tool runs; nil when it is not
// watched (not an exec tool, a dry run, no git).
func (s *session) watchWrites(t *task) *watch {
	wt, ok := s.r.git.(worktreeWatch)
	if !ok || s.r.opts.DryRun || t.tool == nil || t.tool.Kind != model.KindExec {
		return nil
	}
	w := &watch{}
	s.mu.Lock()
	if s.writes.running == nil {
		s.writes.running, s.writes.detail = map[*task]*watch{}, map[*task]WritesDetail{}
	}
	if s.own == nil {
		s.own = s.watchOwn(wt)
	}
	w.ownFrom = len(s.own.found)
	for o, ow := range s.writes.running {
		w.overlap, ow.overlap = append(w.overlap, o), append(ow.overlap, t)
	}
	s.writes.running[t] = w // before the scan: a tool starting meanwhile overlaps
	s.mu.Unlock()
	before, err := wt.Scan(varDir)
	if err != nil {
		s.mu.Lock()
		delete(s.writes.running, t)
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s: what its tool writes is not watched: %v", t.sched.Name, err))
		s.mu.Unlock()
		return nil
	}
	w.before = before
	return w
}

// sortWrites scans again after t's tool ran and sorts what changed: its
// declared writes (committed when the run completed) and anything else it
// changed, which is put back before anything else runs. Changes another
// tool running meanwhile declares are that tool's; files astra wrote
// itself (approval tokens) are astra's.
func (s *session) sortWrites(t *task, w *watch, res executor.Result) {
	if w == nil {
		return
	}
	wt := s.r.git.(worktreeWatch)
	var d WritesDetail
	d.NotReverted = map[string]string{}
	var err error
	// Putting back a .gitignore can show files it hid: one more look.
	for look := 0; look < 2; look++ {
		var changed, undeclared []string
		if changed, err = wt.Changes(w.before, varDir); err != nil {
			break
		}
		s.mu.Lock()
		for _, p := range changed {
			switch {
			case t.tool.Declares(p):
				if !slices.Contains(d.Writes, p) {
					d.Writes = append(d.Writes, p)
				}
			case slices.ContainsFunc(w.overlap, func(o *task) bool { return o.tool.Declares(p) }), slices.Contains(s.touched, p):
			default:
				undeclared = append(undeclared, p)
			}
		}
		s.mu.Unlock()
		if len(undeclared) == 0 {
			break
		}
		var restored []string
		var kept map[string]string
		if restored, kept, err = wt.Restore(w.before, undeclared); err != nil {
			break
		}
		d.Reverted = append(d.Reverted, restored...)
		maps.Copy(d.NotReverted, kept)
		if !slices.ContainsFunc(restored, func(p string) bool { return path.Base(p) == ".gitignore" }) {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.writes.running, t)
	if err != nil {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s: what its tool wrote is unknown: %v", t.sched.Name, err))
		return
	}
	d.Undeclared = append(append([]string(nil), d.Reverted...), slices.Sorted(maps.Keys(d.NotReverted))...)
	slices.Sort(d.Undeclared)
	if res.Status == executor.StatusOK {
		s.writes.add(d.Writes...)
	}
	if n := len(d.Reverted); n > 0 {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s: tool %s changed %d file(s) it does not declare under writes:, put back as git has them: %s",
			t.sched.Name, t.tool.Name, n, listed(d.Reverted, 10)))
	}
	for _, p := range slices.Sorted(maps.Keys(d.NotReverted)) {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s: tool %s changed %s, which it does not declare under writes:; not put back (%s), and never committed",
			t.sched.Name, t.tool.Name, p, d.NotReverted[p]))
	}
	// astra's own files, which the tool may have changed too.
	s.checkOwn()
	if found := s.own.found[w.ownFrom:]; len(found) > 0 {
		d.AstraFiles = map[string]string{}
		for _, c := range found {
			d.AstraFiles[c.path] = c.what
		}
	}
	for _, l := range []*[]string{&d.Writes, &d.Undeclared, &d.Reverted} {
		if len(*l) > maxListedWrites {
			d.More += len(*l) - maxListedWrites
			*l = (*l)[:maxListedWrites]
		}
	}
	if len(d.NotReverted) == 0 {
		d.NotReverted = nil
	}
	if len(d.Writes)+len(d.Undeclared)+len(d.AstraFiles) > 0 {
		s.writes.detail[t] = d
	}
}

// writesDetail is the Detail of t's outcome event, nil when its tool
// changed nothing. Called with s.mu held.
func (s *session) writesDetail(t *task) json.RawMessage {
	d, ok := s.writes.detail[t]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(d)
	return b
}

func listed(paths []string, n int) string {
	if len(paths) <= n {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(paths[:n], ", "), len(paths)-n)
}

// keepWrites reads the declared writes of this run (nil: removed), so
// that a resync, which puts the worktree at the remote's tip, does not
// lose them; putWrites puts them back.
func (s *session) keepWrites() (map[string][]byte, error) {
	if len(s.writes.files) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(s.r.opts.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	out := map[string][]byte{}
	for _, p := range dedupe(s.writes.files) {
		b, err := root.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out[p] = nil
		case err != nil:
			return nil, fmt.Errorf("keeping %s across a resync: %w", p, err)
		default:
			out[p] = b
		}
	}
	return out, nil
}

func (s *session) putWrites(files map[string][]byte) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(s.r.opts.Root)
	if err != nil {
		return err
	}
	defer root.Close()
	for p, b := range files {
		if err := putFile(root, p, b); err != nil {
			return fmt.Errorf("restoring %s, which a tool wrote: %w", p, err)
		}
		s.writes.add(p)
	}
	return nil
}

func putFile(root *os.Root, p string, b []byte) error {
	if b == nil {
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return root.WriteFile(p, b, 0o644)
}

// Spilled events take the declared writes with them, under writesPrefix
// (removals listed in writesRemoved), so the run that merges the spill
// commits them too.
const (
	writesPrefix  = "writes/"
	writesRemoved = "writes.removed"
)

// spillWrites adds this run's declared writes to a spill's files.
func (s *session) spillWrites(files map[string][]byte) error {
	kept, err := s.keepWrites()
	var removed []string
	for p, b := range kept {
		if b == nil {
			removed = append(removed, p)
			continue
		}
		files[writesPrefix+p] = b
	}
	if len(removed) > 0 {
		slices.Sort(removed)
		files[writesRemoved] = []byte(strings.Join(removed, "\n") + "\n")
	}
	return err
}

// mergeWrites puts a spill's writes in the worktree, to be committed by
// this run. Only paths some tool declares are accepted: validate keeps
// those inside the repository and away from what astra manages.
func (s *session) mergeWrites(spill string, files map[string][]byte) error {
	out := map[string][]byte{}
	for k, b := range files {
		if p, ok := strings.CutPrefix(k, writesPrefix); ok {
			out[p] = b
		}
	}
	for _, p := range strings.Fields(string(files[writesRemoved])) {
		out[p] = nil
	}
	for p := range out {
		if !s.declared(p) {
			return fmt.Errorf("spill %s holds %s, which no tool declares it writes", spill, p)
		}
	}
	return s.putWrites(out)
}

// declared reports whether any tool declares it writes p.
func (s *session) declared(p string) bool {
	for _, t := range s.r.cfg.Policies.Tools {
		if t.Declares(p) {
			return true
		}
	}
	return false
}
