package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Syncer is the git side of a run (internal/gitops).
type Syncer interface {
	Commit(msg string, paths ...string) (hash string, changed bool, err error)
	Push(ctx context.Context) error
	Sync(ctx context.Context) error
	Materialize(prefix string) error
	PushSpill(ctx context.Context, name string, files map[string][]byte, msg string) error
	ListSpills(ctx context.Context) ([]string, error)
	ReadSpill(ctx context.Context, name string) (map[string][]byte, error)
	// KeepSpill moves a spill to prefix (gitops.SpillMerged or
	// gitops.SpillRefused): no run lists it again, nothing is deleted.
	KeepSpill(ctx context.Context, name, prefix string) error
	// CommittedFileSize and RemoteFileSize say how much of a file git
	// holds, so a ledger repair never cuts committed or pushed events.
	CommittedFileSize(path string) (int64, bool, error)
	RemoteFileSize(path string) (int64, bool, error)
	// CommitMessages are the newest commits of astra's branch, whose
	// trailers anchor the ledger's head.
	CommitMessages(limit int) ([]gitops.CommitMessage, error)
	// Warnings are what git recovered from (a stale lock it removed).
	Warnings() []string
	// Branch is the branch astra commits to; Head its local tip ("" before
	// its first commit); HeadHas whether the checked-out commit has a path.
	// They tell where the ledger lives (see checkLedgerBranch).
	Branch() string
	Head() (string, error)
	HeadHas(path string) (bool, error)
	// LockRun keeps other astra runs out of the checkout until unlock
	// is called or the process exits.
	LockRun() (unlock func(), err error)
	// Unpushed counts the branch's commits the remote lacked at the last
	// fetch or push; known is false when that cannot be told.
	Unpushed() (n int, known bool, err error)
	// Drift says how the worktree files under a prefix differ from the
	// branch tip.
	Drift(prefix string) (gitops.Drift, error)
}

// maxRounds bounds how often a run retries after another runner pushed
// first; each round waits a little longer, with jitter. With N runners
// racing, one wins each round, so the last may need about N rounds.
const maxRounds = 12

// errRaced means another runner pushed first.
var errRaced = errors.New("another runner pushed first")

// publish commits what the run recorded so far and pushes it. A rejected
// push returns errRaced.
func (s *session) publish(ctx context.Context, phase string) error {
	// The state snapshot goes into the commit of the events it covers.
	if err := s.j.SaveSnapshot(); err != nil {
		return errkind.Infraf("writing the state snapshot: %w", err)
	}
	g := s.r.git
	if g == nil || s.r.opts.DryRun {
		return nil
	}
	s.syncMarks()
	paths := s.j.Files()
	if !s.r.opts.StateBranch {
		paths = append(paths, s.touched...)
	}
	paths = append(paths, s.seals.files...)  // what a tamper check put back or kept, on any branch
	paths = append(paths, s.marks...)        // cancel markers written or removed, on any branch
	paths = append(paths, s.writes.files...) // tools' declared writes go with their outcomes, on any branch
	if len(paths) == 0 {
		return nil
	}
	if len(s.writes.running) > 0 {
		s.checkOwn() // a tool still running may have changed astra's files
	}
	msg := s.commitMessage(phase)
	if anchors := s.j.Anchors(); len(anchors) > 0 {
		msg += "\n" + ledger.FormatAnchors(anchors)
	}
	paths = dedupe(paths)
	hash, changed, err := g.Commit(msg, paths...)
	if err != nil {
		return errkind.Infraf("committing the ledger: %w", err)
	}
	s.j.Committed()
	s.ownCommitted(paths)
	if changed {
		s.report.Commit, s.report.Pushed = hash, false
	}
	if !changed && s.report.Pushed && s.pushed == len(s.j.Recorded()) {
		return nil // the remote has all of it already (an outcome pushed at once)
	}
	if s.r.opts.NoPush {
		s.pushed = len(s.j.Recorded())
		return nil
	}
	s.report.Unpushed = len(s.j.Recorded()) - s.pushed
	if err := g.Push(ctx); err != nil {
		if errors.Is(err, gitops.ErrRejected) {
			return fmt.Errorf("%w: %w", errRaced, err)
		}
		return s.r.pushError(err)
	}
	s.pushed = len(s.j.Recorded())
	s.report.Pushed, s.report.PushedCommit, s.report.Unpushed = true, hash, 0
	s.rememberSeen(hash)
	return nil
}

// resync moves the checkout to the remote's ledger after a rejected push,
// waiting first so racing runners spread out: the wait doubles with each
// race this run lost (from 50 ms, at most 3.2 s) and is drawn from
// [d, 2d) so two runners that collided do not collide again.
func (s *session) resync(ctx context.Context) error {
	if err := s.r.opts.Sleep(ctx, raceBackoff(s.report.Raced)); err != nil {
		return err
	}
	return s.r.pull(ctx)
}

func raceBackoff(raced int) time.Duration {
	d := 50 * time.Millisecond << min(max(raced-1, 0), 6)
	return d + rand.N(d)
}

// pull fetches the branch astra commits to and puts its ledger files in
// the worktree.
func (r *Runner) pull(ctx context.Context) error {
	if err := r.git.Sync(ctx); err != nil && !errors.Is(err, gitops.ErrNoRemoteBranch) {
		return errkind.Infraf("fetching the remote ledger: %w", err)
	}
	if err := r.checkStateBranch(); err != nil {
		return err
	}
	return r.materializeLedger()
}

// finish publishes the outcomes. When another runner pushed meanwhile, the
// ledger is rebuilt from the remote and this run's not-yet-pushed events
// are appended again on top (new seq and chain). After maxRounds the
// events go to a spill ref that a later run merges: nothing is lost.
func (s *session) finish(ctx context.Context) error {
	for round := 0; ; round++ {
		err := s.publish(ctx, "run")
		if err == nil {
			s.checkLoose()
			return nil
		}
		if !errors.Is(err, errRaced) {
			return s.spill(ctx, err)
		}
		s.report.Raced++
		if round >= maxRounds {
			return s.spill(ctx, errkind.Infraf("the push was rejected %d times: other runners keep pushing first: %w", round+1, err))
		}
		pending := s.j.Recorded()[s.pushed:]
		kept, err := s.keepWrites()
		if err == nil {
			err = s.resync(ctx)
		}
		if err == nil {
			s.redrop()
			err = s.putWrites(kept)
		}
		if err != nil {
			return s.spill(ctx, err)
		}
		if err := s.reapply(pending); err != nil {
			return s.spill(ctx, err)
		}
	}
}

// looseCounter is gitops.Repo's estimate of its loose objects.
type looseCounter interface{ Loose() gitops.Loose }

// checkLoose warns when the checkout holds more loose objects than git
// would leave unpacked: go-git never packs them, and a checkout that lives
// on grows by a ledger file per run until git does.
func (s *session) checkLoose() {
	lc, ok := s.r.git.(looseCounter)
	if !ok || s.report.Commit == "" {
		return
	}
	if l := lc.Loose(); l.TooLoose() {
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("this checkout holds about %d loose git objects (%d MB): each run stores the ledger file it appends to in full, "+
			"and astra does not pack them; run `git gc` here once and `git maintenance start` so git keeps packing them", l.Objects, l.Bytes/1e6))
	}
}

// reapply replays the ledger as the remote has it and appends pending on
// top, leaving out alerts and schedule changes the other runner recorded
// already.
func (s *session) reapply(pending []*ledger.Event) error {
	store := s.r.store()
	st, tail, err := state.Replay(store, s.now)
	if err != nil {
		return errkind.Infraf("replaying the remote ledger: %w", err)
	}
	j := s.r.journal(store, st, tail, false)
	j.Observe(s.ownWrote)
	var keep []*ledger.Event
	for _, e := range pending {
		if redundant(st, e) {
			continue
		}
		c := *e
		keep = append(keep, &c)
	}
	if err := j.Record(keep...); err != nil {
		return err
	}
	s.j, s.pushed = j, 0
	return nil
}

// redundant reports whether the remote ledger already says what e says.
func redundant(st *state.State, e *ledger.Event) bool {
	switch e.Event {
	case ledger.BudgetWarning, ledger.BudgetExceeded:
		return e.Period != "" && st.Alerted[state.AlertKey(e.Period, e.TS, e.Threshold)]
	case ledger.BudgetPaused:
		return st.Pauses[e.Period] != nil
	case ledger.ScheduleCreated, ledger.ScheduleUpdated:
		return st.Known[e.ScheduleID] == e.PayloadHash
	case ledger.ScheduleDeleted:
		_, known := st.Known[e.ScheduleID]
		return !known
	}
	return false
}

// spill saves the events that could not be pushed on a ref of their own
// (a new ref cannot conflict), for a later run to merge; cause is
// returned, so the run exits 3.
func (s *session) spill(ctx context.Context, cause error) error {
	pending := s.j.Recorded()[s.pushed:]
	if len(pending) == 0 || s.r.git == nil || s.r.opts.NoPush || ctx.Err() != nil { // interrupted: nothing more goes out
		return cause
	}
	if err := spillable(pending); err != nil {
		return fmt.Errorf("%w; the events stay in the local commit only: %w", cause, err)
	}
	var buf bytes.Buffer
	for _, e := range pending {
		if e.Event == ledger.LedgerCheckpoint {
			continue // the merging run's journal writes its own
		}
		buf.Write(ledger.AppendJSON(nil, e))
		buf.WriteByte('\n')
	}
	name := fmt.Sprintf("%s-%d", sanitizeRef(s.r.opts.RunnerID), time.Now().UnixNano())
	files := map[string][]byte{spillEventsFile: buf.Bytes()}
	err := s.spillWrites(files)
	if err == nil {
		err = s.signSpill(name, files) // over the writes too
	}
	msg := fmt.Sprintf("astra: %d events a run could not push [skip ci]", len(pending))
	if err == nil {
		err = s.r.git.PushSpill(ctx, name, files, msg)
	}
	branch := strings.TrimPrefix(gitops.SpillPrefix, "refs/heads/") + name
	via := ""
	if api, ok := s.r.forge.(spillAPI); ok && err != nil && errors.Is(err, errkind.ErrInfra) && ctx.Err() == nil {
		// git could not reach the remote: GitHub's API is another way in.
		if _, aerr := api.CreateBranchWithFiles(ctx, branch, files, msg); aerr != nil {
			err = fmt.Errorf("%w; through GitHub's API: %w", err, aerr)
		} else {
			err, via = nil, " (through GitHub's API: git could not reach the remote)"
		}
	}
	if err != nil {
		return fmt.Errorf("%w; the events stay in the local commit only (spilling failed: %w)", cause, err)
	}
	s.report.Spilled = branch
	s.deleteSpills(ctx) // their events are in the new spill
	return fmt.Errorf("%w; %d events were saved on branch %s%s and the next run will add them", cause, len(pending), s.report.Spilled, via)
}

// spillAPI is the second way out for a spill (forge.Client): a branch
// made through GitHub's git data API when git cannot push it.
type spillAPI interface {
	CreateBranchWithFiles(ctx context.Context, branch string, files map[string][]byte, message string) (string, error)
}

// deleteSpills removes the spill refs merged by this run, once their
// events are safe elsewhere.
func (s *session) deleteSpills(ctx context.Context) {
	for _, name := range s.spills {
		if err := s.r.git.KeepSpill(ctx, name, gitops.SpillMerged); err != nil {
			s.spillNotMoved(name, err)
		}
	}
	s.spills = nil
	s.keepRefused(ctx)
}

// mergeSpills adds the events of earlier runs' spill refs to the ledger
// (their own seq and chain are replaced); the refs are deleted once the
// merge is pushed.
func (s *session) mergeSpills(ctx context.Context) error {
	if s.r.git == nil || s.r.opts.DryRun || s.r.opts.NoPush {
		return nil
	}
	names, err := s.r.git.ListSpills(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		files, err := s.r.git.ReadSpill(ctx, name)
		if err != nil {
			return err
		}
		if refused, err := s.refuseSpill(name, files); refused || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		evs, err := s.spillEvents(files)
		if err != nil {
			return fmt.Errorf("spill %s: %w", name, err)
		}
		if len(evs) == 0 && s.deletePushedSpill(ctx, name) {
			continue
		}
		if err := s.j.Record(evs...); err != nil {
			return err
		}
		if err := s.mergeWrites(name, files); err != nil {
			return err
		}
		s.report.Merged += len(evs)
		s.spills = append(s.spills, name)
	}
	return nil
}

// deletePushedSpill deletes a spill that adds nothing to the ledger once
// the remote has every commit here, and reports whether it did.
func (s *session) deletePushedSpill(ctx context.Context, name string) bool {
	if n, known, err := s.r.git.Unpushed(); err != nil || !known || n != 0 {
		return false
	}
	// Every event of it is on the remote already.
	if err := s.r.git.KeepSpill(ctx, name, gitops.SpillMerged); err != nil {
		s.spillNotMoved(name, err)
	}
	return true
}

// spillNotMoved notes a merged spill the remote did not delete: the
// remote's failure (exit 3), not a task's; a later run deletes it, and
// recording its events again never doubles them (notInLedger).
func (s *session) spillNotMoved(name string, err error) {
	s.report.InfraErrors = append(s.report.InfraErrors, fmt.Sprintf("moving merged spill %s to astra/spill-merged/ (a later run moves it): %s", name, s.r.opts.Redact.String(err.Error())))
}

// spillEvents are the events of a spill's files that the ledger lacks.
func (s *session) spillEvents(files map[string][]byte) ([]*ledger.Event, error) {
	var evs []*ledger.Event
	for _, line := range bytes.Split(bytes.TrimSpace(files[spillEventsFile]), []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var e ledger.Event
		if err := ledger.Unmarshal(line, &e); err != nil {
			return nil, err
		}
		if !redundant(s.state(), &e) {
			evs = append(evs, &e)
		}
	}
	// A spill merged and pushed before its deletion went through (a run
	// killed in between) is in the ledger already.
	return notInLedger(s.r.opts.Root, evs)
}

func sanitizeRef(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}

// dedupe returns paths sorted, each once, in a new slice: paths may be a
// list the session keeps (its tools' writes), which sorting and compacting
// in place would reorder and blank at the tail.
func dedupe(paths []string) []string {
	out := slices.Clone(paths)
	slices.Sort(out)
	return slices.Compact(out)
}

// commitMessage summarises the run for `git log`.
func (s *session) commitMessage(phase string) string {
	r := s.report
	var b strings.Builder
	switch {
	case s.label != "":
		b.WriteString(s.label)
	case phase == "claim":
		fmt.Fprintf(&b, "astra: claim %d run(s)", len(s.j.Recorded())-s.pushed)
	case len(r.Outcomes) == 0:
		fmt.Fprintf(&b, "astra: record %d event(s), nothing was due", len(s.j.Recorded())-s.pushed)
	default:
		fmt.Fprintf(&b, "astra: %d ran, %d failed, %d skipped, %d awaiting approval",
			r.Count(ActionRan), r.Count(ActionFailed)+r.Count(ActionLost), r.Count(ActionSkipped)+r.Count(ActionMissed), r.Count(ActionAwaitingApproval))
	}
	b.WriteString(" [skip ci]\n\n")
	for _, o := range r.Outcomes {
		line := fmt.Sprintf("- %s %s", o.Action, o.Name)
		if !o.Slot.IsZero() {
			line += " @ " + o.Slot.UTC().Format(time.RFC3339)
		}
		if o.Reason != "" {
			line += " (" + o.Reason + ")"
		}
		b.WriteString(line + "\n")
	}
	if len(r.Outcomes) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s: %s", gitops.RunnerTrailer, s.r.opts.RunnerID) // a trailer; the ledger anchors follow
	return b.String()
}
