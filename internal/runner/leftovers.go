package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/repofs"
	"github.com/astra-gitops/astra/internal/state"
)

// recovered is what recoverLeftovers found an earlier run left and put
// right.
type recovered struct {
	notes    []string         // said in the report's warnings
	repaired *ledger.Repaired // a torn tail cut (--repair)
}

// reasonNotClaimed: a run's claims could not be recorded or pushed for a
// reason other than a lost race (a lock, the network); nothing ran.
const reasonNotClaimed = "not_claimed"

// finishReport adds to a report what the run did outside its sessions:
// what recoverLeftovers and git recovered from, and the commits that stay
// local.
func (r *Runner) finishReport(rep *Report) {
	if rep == nil || r.git == nil {
		return
	}
	rep.Warnings = append(append(r.prior.notes[:len(r.prior.notes):len(r.prior.notes)], rep.Warnings...), r.git.Warnings()...)
	if rep.Repaired == nil {
		rep.Repaired = r.prior.repaired
	}
	if r.opts.NoPush && !r.opts.DryRun {
		if n, known, err := r.git.Unpushed(); err == nil && known {
			rep.UnpushedCommits = n
		}
	}
}

// recoverLeftovers starts every run that may write. It keeps other astra
// runs out of the checkout until release is called, finishes a sync an
// earlier run was killed in, and makes sure nothing an earlier run
// recorded stays local: events it appended and did not commit are
// committed, and commits the remote lacks (a kill between commit and push,
// a --no-push run, a push that failed) are pushed before anything is
// decided, replayed on top of the remote ledger when the remote moved
// meanwhile, as after a lost push race. What it did goes to the run's
// warnings.
func (r *Runner) recoverLeftovers(ctx context.Context, command string) (release func(), err error) {
	release = func() {}
	if r.git == nil || r.opts.DryRun {
		return release, nil
	}
	unlock, err := r.git.LockRun()
	if err != nil {
		return release, errkind.Infraf("%w", err)
	}
	if err := r.removeTempFiles(); err != nil {
		return unlock, err
	}
	if err := r.refuseLocalWork(); err != nil {
		return unlock, err
	}
	return unlock, r.recoverLeftoversLocked(ctx, command)
}

// removeTempFiles removes what a run killed while writing a file under
// var/ left beside it (repofs.WriteFile's *.tmp), before any commit could
// take it in; one a commit holds already is left to git.
func (r *Runner) removeTempFiles() error {
	temps, err := repofs.TempFiles(r.opts.Root, "var")
	if err != nil {
		return errkind.Infraf("looking for files a killed run left half-written under var/: %w", err)
	}
	for _, p := range temps {
		if _, committed, err := r.git.CommittedFileSize(p); err != nil || committed {
			continue
		}
		if err := os.Remove(filepath.Join(r.opts.Root, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errkind.Infraf("removing %s, which a killed run left half-written: %w", p, err)
		}
	}
	return nil
}

// recoverLeftoversLocked is recoverLeftovers once the run lock is held.
func (r *Runner) recoverLeftoversLocked(ctx context.Context, command string) error {
	n, known, ahead, err := r.findLeftovers()
	if err != nil || (len(ahead) == 0 && n == 0) {
		return err
	}
	// Something is left: read it only from a ledger that verifies (and
	// is repaired first with --repair).
	s, err := r.open(ctx, command)
	if err != nil {
		return err
	}
	r.prior.repaired = s.report.Repaired
	var pending []*ledger.Event
	if known {
		if pending, err = r.unpushedEvents(); err != nil {
			return errkind.Ledger(fmt.Errorf("reading the events the remote lacks: %w", err), "")
		}
	}
	if len(ahead) > 0 {
		if n, err = r.commitAhead(s, ahead, n); err != nil {
			return err
		}
	}
	if r.opts.NoPush || (len(pending) == 0 && n == 0) {
		return nil
	}
	return r.pushLeftovers(ctx, command, pending, n)
}

// findLeftovers counts the commits the remote lacks (n; known is false
// when that cannot be told) and finishes a sync an earlier run was killed
// in, returning the ledger files it appended to and did not commit.
func (r *Runner) findLeftovers() (n int, known bool, ahead []string, err error) {
	if !r.opts.NoPush {
		if n, known, err = r.git.Unpushed(); err != nil {
			return 0, false, nil, errkind.Infraf("looking for commits the remote lacks: %w", err)
		}
	}
	switch {
	case !r.opts.StateBranch:
		if ahead, err = r.restoreDrift(); err != nil {
			return 0, false, nil, err
		}
	case n > 0:
		// The checkout holds the default branch's copy of the ledger, or
		// whatever the last run left: the local state branch is what was
		// committed (appends a killed run did not commit are not known).
		if err := r.materializeLedger(); err != nil {
			return 0, false, nil, err
		}
	}
	return n, known, ahead, nil
}

// commitAhead commits the ledger files an earlier run appended to and
// did not commit, and returns the commits the remote now lacks (n when
// not pushing).
func (r *Runner) commitAhead(s *session, ahead []string, n int) (int, error) {
	msg := fmt.Sprintf("astra: record the events a run appended and did not commit\n\n%s: %s", gitops.RunnerTrailer, r.opts.RunnerID)
	if anchors := s.j.Anchors(); len(anchors) > 0 {
		msg += "\n\n" + ledger.FormatAnchors(anchors)
	}
	if _, _, err := r.git.Commit(msg, ahead...); err != nil {
		return n, errkind.Infraf("committing the events an earlier run left uncommitted: %w", err)
	}
	r.prior.notes = append(r.prior.notes, fmt.Sprintf("committed %s: an earlier run appended to it and was stopped before its commit", strings.Join(ahead, ", ")))
	if r.opts.NoPush {
		return n, nil
	}
	n, known, err := r.git.Unpushed()
	if err != nil {
		return n, errkind.Infraf("looking for commits the remote lacks: %w", err)
	}
	if !known {
		n = 1 // the remote's state is unknown: let the push tell
	}
	return n, nil
}

// pushLeftovers pushes the n commits (pending: their events) an earlier
// run left unpushed, or records their events on top of the remote ledger
// when the remote moved meanwhile or a claim among them never reached it.
func (r *Runner) pushLeftovers(ctx context.Context, command string, pending []*ledger.Event, n int) error {
	kept, dropped := withoutOrphanClaims(pending)
	if dropped == 0 {
		err := r.git.Push(ctx)
		if err == nil {
			r.prior.notes = append(r.prior.notes, fmt.Sprintf("pushed %s that an earlier run committed and did not push (%s)", plural(n, "commit"), plural(len(pending), "event")))
			return nil
		}
		if !errors.Is(err, gitops.ErrRejected) {
			return errkind.Infraf("pushing %s an earlier run left unpushed (%s; nothing ran, they stay committed here): %w", plural(n, "commit"), plural(len(pending), "event"), err)
		}
	}
	return r.replayLeftovers(ctx, command, kept, dropped)
}

// replayLeftovers records pending on top of the remote ledger and pushes
// it, like the outcomes of a run whose push lost a race.
func (r *Runner) replayLeftovers(ctx context.Context, command string, pending []*ledger.Event, dropped int) error {
	if err := r.pull(ctx); err != nil {
		return err
	}
	s, err := r.open(ctx, command)
	if err != nil {
		return err
	}
	unrecorded, err := notInLedger(r.opts.Root, pending)
	if err != nil {
		return errkind.Ledger(err, "")
	}
	var keep []*ledger.Event
	for _, e := range unrecorded {
		if !redundant(s.state(), e) {
			keep = append(keep, e)
		}
	}
	if err := s.record(keep...); err != nil {
		return err
	}
	s.label = fmt.Sprintf("astra: record %d event(s) an earlier run did not push", len(keep))
	if err := s.finish(ctx); err != nil {
		return err
	}
	note := fmt.Sprintf("an earlier run left %s unpushed: %d added on top of the remote ledger", plural(len(pending)+dropped, "event"), len(keep))
	if len(keep) < len(pending) {
		note += fmt.Sprintf(" (it had %d already)", len(pending)-len(keep))
	}
	if dropped > 0 {
		note += fmt.Sprintf("; %s never pushed (so nothing ran under them) dropped, their slots decided again", plural(dropped, "claim"))
	}
	r.prior.notes = append(r.prior.notes, note)
	return nil
}

// restoreDrift brings the ledger files of the checked-out branch back in
// line with its tip after a run that was killed: a file a sync did not
// finish writing (older than the tip's, or missing) is restored. It
// returns the files holding appends that were not committed.
func (r *Runner) restoreDrift() (ahead []string, err error) {
	for _, p := range ledgerops.Paths {
		d, err := r.git.Drift(p)
		if err != nil {
			return nil, errkind.Infraf("comparing %s with the branch: %w", p, err)
		}
		for _, f := range d.Behind {
			if err := r.git.Materialize(f); err != nil {
				return nil, errkind.Infraf("restoring %s from the branch: %w", f, err)
			}
		}
		if len(d.Behind) > 0 {
			r.prior.notes = append(r.prior.notes, fmt.Sprintf("restored %s from the branch: the checkout held an older version (a sync was stopped before it wrote the files)",
				strings.Join(d.Behind, ", ")))
		}
		ahead = append(ahead, d.Ahead...)
	}
	return ahead, nil
}

// materializeLedger puts the ledger files of astra's branch in the
// worktree.
func (r *Runner) materializeLedger() error {
	for _, p := range ledgerops.Paths {
		if err := r.git.Materialize(p); err != nil {
			return errkind.Infraf("writing %s from the branch: %w", p, err)
		}
	}
	return nil
}

// unpushedEvents reads what the ledger and the memory log hold beyond
// what the remote had at the last fetch or push. The approval log is left
// out: it holds copies of ledger events, which recording writes again.
func (r *Runner) unpushedEvents() ([]*ledger.Event, error) {
	var out []*ledger.Event
	for _, store := range []*ledger.Store{ledger.Open(r.opts.Root, r.opts.SegmentSize), ledger.OpenDir(r.opts.Root, state.MemoryDir, 0)} {
		segs, err := store.Segments()
		if err != nil {
			return nil, err
		}
		first := len(segs) // the segments the remote lacks, or lacks the end of
		for first > 0 {
			size, ok, err := r.git.RemoteFileSize(segs[first-1].Path)
			if err != nil {
				return nil, err
			}
			if ok && size >= segs[first-1].Size {
				break
			}
			first--
		}
		for _, seg := range segs[first:] {
			size, _, err := r.git.RemoteFileSize(seg.Path)
			if err != nil {
				return nil, err
			}
			evs, err := ledger.ReadAfter(r.opts.Root, seg, size)
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				if e.Event == ledger.LedgerCheckpoint || (store.Dir() == state.MemoryDir && e.Event != ledger.MemoryStored) {
					continue // recording writes its own checkpoint, and copies into the memory log
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// withoutOrphanClaims drops the claims among pending that have no outcome
// there, with the approvals they consumed: a claim that never reached the
// remote owned nothing, and no tool ran under it once pushed. Left in, it
// would hold its slot until its deadline and then retry it, possibly after
// another runner ran it.
func withoutOrphanClaims(pending []*ledger.Event) ([]*ledger.Event, int) {
	ended := map[string]bool{}
	orphan := map[string]bool{} // by key
	for i := len(pending) - 1; i >= 0; i-- {
		e := pending[i]
		switch e.Event {
		case ledger.RunCompleted, ledger.RunFailed, ledger.RunSkipped:
			ended[e.RunID()] = true
		case ledger.RunClaimed:
			if !ended[e.RunID()] {
				orphan[e.IdempotencyKey] = true
			}
		}
	}
	if len(orphan) == 0 {
		return pending, 0
	}
	var keep []*ledger.Event
	dropped := 0
	for _, e := range pending {
		if orphan[e.IdempotencyKey] && (e.Event == ledger.RunClaimed && !ended[e.RunID()] || e.Event == ledger.ApprovalConsumed) {
			if e.Event == ledger.RunClaimed {
				dropped++
			}
			continue
		}
		keep = append(keep, e)
	}
	return keep, dropped
}

// notInLedger leaves out of evs those the ledger (or, for memory, the
// memory log) already holds: the same event with another seq and chain.
// Recording left-over or spilled events again must not double them when
// they reached the remote another way (a push whose end went unnoticed,
// a spill another runner merged). It reads the months from the oldest of
// evs on.
func notInLedger(root string, evs []*ledger.Event) ([]*ledger.Event, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	want := map[string]int{}
	oldest := evs[0].TS
	for _, e := range evs {
		want[fingerprint(e)]++
		if e.TS.Before(oldest) {
			oldest = e.TS
		}
	}
	for _, store := range []*ledger.Store{ledger.Open(root, 0), ledger.OpenDir(root, state.MemoryDir, 0)} {
		segs, err := store.Segments()
		if err != nil {
			return nil, err
		}
		from := ledger.Month(oldest)
		for len(segs) > 0 && segs[0].Month < from {
			segs = segs[1:]
		}
		_, err = ledger.Scan(root, segs, ledger.ScanOptions{SkipOutput: true}, func(e *ledger.Event) error {
			if k := fingerprint(e); want[k] > 0 {
				want[k] = -1 // present: drop every copy in evs
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []*ledger.Event
	for _, e := range evs {
		if want[fingerprint(e)] > 0 {
			out = append(out, e)
		}
	}
	return out, nil
}

// fingerprint identifies an event apart from where it was written (seq,
// prev) and the output it carries.
func fingerprint(e *ledger.Event) string {
	c := *e
	c.Seq, c.Prev, c.Output = 0, "", ""
	return string(ledger.AppendJSON(nil, &c))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
