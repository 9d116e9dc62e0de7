// Package runner carries out one astra run: it replays the ledger, works
// out what is due, gates each candidate, records every decision, runs what
// may run and records the outcomes. Git and GitHub are reached through the
// small Syncer and Forge interfaces, so the same code runs locally, in a
// dry run and in CI.
package runner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/posture"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/telemetry"
)

// defaultLimit is how many candidates one run processes (--limit).
const defaultLimit = 10

// defaultOutputTail is how much of a tool's output the ledger keeps.
const defaultOutputTail = 1024

// claimMargin is added to a tool's wall clock before its claim counts as
// lost: the time a runner needs to record and push an outcome.
const claimMargin = 10 * time.Minute

// Executor runs tools (internal/executor).
type Executor interface {
	Run(ctx context.Context, req executor.Request) executor.Result
}

// Progress hears of a run while it goes, for the people waiting on it:
// the run begins (before the ledger is read), each task starts and ends.
// Start and End come from the tasks' goroutines, one at a time.
type Progress interface {
	Begin(command string, now time.Time, dryRun bool)
	Start(schedule string)
	End(action, schedule, detail string)
}

// Options configure a run.
type Options struct {
	Root        string
	Clock       func() time.Time // the run's time: the machine's, or a test clock (TestClock)
	DryRun      bool
	Limit       int
	Filter      plan.Filter
	MaxParallel int
	Repair      bool   // cut a broken ledger tail before appending (recorded)
	NoPush      bool   // commit locally, do not push
	StateBranch bool   // the ledger lives on a branch other than the checkout's
	RunnerID    string // names this runner in claims
	SegmentSize int64
	OutputTail  int    // bytes of tool output kept in the ledger (default 1024)
	Secret      []byte // ASTRA_APPROVAL_SECRET: approval tokens must be signed
	Getenv      func(string) string
	Progress    Progress // hears of the run as it goes; nil for none
	Redact      *redact.Redactor
	// Notify comments on a GitHub issue, deduplicated by key among the
	// comments since since (zero: all of them); nil without GitHub.
	Notify func(ctx context.Context, issue int, body, key string, since time.Time) error
	// CI: running in GitHub Actions, where nothing can be approved without
	// a pull request and a missing approval secret deserves a warning.
	CI bool
	// Sleep waits between rounds of a claim race; tests replace it so no
	// test waits on the wall clock. Default: a timer that ctx cancels.
	Sleep func(ctx context.Context, d time.Duration) error
	// Tracer exports a span per run and per task (nil: ids only).
	Tracer *telemetry.Tracer
	// TraceParent is the W3C traceparent of whatever started astra: the
	// run's span continues it, and new tasks join its trace.
	TraceParent string
	// Posture is what the safety posture check before the first tier-2
	// run reads besides the checkout and the policies (posture.go): its
	// Forge nil means no GitHub, so the API checks are unknown and tier 2
	// stops unless trust.accept_risk. Root, Policies, Run and Tier2Only
	// are the runner's.
	Posture posture.Input
	// TestClock: Clock is a test's fixed time (--now with --test-clock):
	// every event recorded says "clock":"test", and no trusted time is
	// asked (clock.go).
	TestClock bool
	// TrustedTime are what the clock of a run that records is checked
	// against, in order (clock.go); Untimed is the warning a run without
	// any gives ("" for none).
	TrustedTime []TimeSource
	Untimed     string
	// Seals are a sealed ledger's (package ledgerkey; nil: not sealed):
	// every store the run opens reads and appends with them (seals.go).
	Seals *ledger.Seals
	// SignSpill and VerifySpill seal a spill's manifest (every file it
	// holds, with its sha256) and check that seal (package ledgerkey); nil
	// when the ledger is not sealed (spills.go).
	SignSpill   func(name string, manifest []byte) ([]byte, error)
	VerifySpill func(name string, manifest, sig []byte) error
}

// Runner runs schedules under the configuration.
type Runner struct {
	cfg   *model.Config
	opts  Options
	exec  Executor
	git   Syncer
	forge Forge
	// cfgCommit is the commit cfg was read from (HEAD when the runner was
	// made): schedule changes are credited by its history.
	cfgCommit string
	prior     recovered // what recoverLeftovers recovered from, for the report
	// posture is the run's one check of the safety posture (posture.go).
	posture postureVerdict
	// clockChecked: the clock was held to a trusted time (clock.go).
	clockChecked bool
	// toolFilesList is what tools run or load, kept from other tools
	// (ownfiles.go).
	toolFilesOnce sync.Once
	toolFilesOf   map[*model.Tool][2][]string // files, directories bound whole
}

// New returns a runner. git and forge may be nil: then nothing is
// committed, and approvals are local token files only.
func New(cfg *model.Config, opts Options, exec Executor, git Syncer, forge Forge) *Runner {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Limit <= 0 {
		opts.Limit = defaultLimit
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 1
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.RunnerID == "" {
		opts.RunnerID = "local"
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	r := &Runner{cfg: cfg, opts: opts, exec: exec, git: git, forge: forge}
	if hist, ok := git.(changeHistory); ok {
		// cfg was read from the checkout as it is now: a sync later in
		// the run moves HEAD past commits that did not make cfg, and a
		// schedule's change is credited by the history up to this one.
		// Unreadable, the walk starts at HEAD and reports its error.
		r.cfgCommit, _ = hist.CheckoutHead()
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// session is the state of one attempt at a run: a replayed ledger and the
// journal recording into it.
type session struct {
	r         *Runner
	now       time.Time
	j         *state.Journal
	mu        sync.Mutex // guards j and report while tasks run in parallel
	report    *Report
	pushed    int               // recorded events already pushed (claims)
	touched   []string          // files other than the journal's this run changed (token files)
	dropped   map[string]string // schedule id -> hash of the token file this run deleted
	writes    writeLog          // what tools wrote (writes.go)
	own       *own              // astra's files while tools run (ownfiles.go)
	spills    []string          // spill refs merged by this run
	notMerged []string          // spill refs this run refused (spills.go)
	fan       *fanOut           // astra plan: claims go to a job matrix, nothing runs here (fanout.go)
	newest    time.Time         // ts of the ledger's newest event when replayed
	label     string            // the commit message's first line, when not the usual
	seals     sealWork          // tampering found before the journal opened (seals.go)
	marks     []string          // cancel markers this run wrote or removed (cancel.go)
	// riskAccepted: trust.risk_accepted is recorded; postureOutage: the
	// posture check's outage is reported (posture.go).
	riskAccepted, postureOutage bool
}

// open replays the ledger and starts a journal, repairing a broken tail
// when asked to.
func (r *Runner) open(ctx context.Context, command string) (*session, error) {
	now := r.opts.Clock().UTC()
	store := r.store()
	s := &session{r: r, now: now, report: &Report{Command: command, Now: now, DryRun: r.opts.DryRun}}
	if r.git == nil && !r.opts.DryRun {
		s.report.Warnings = append(s.report.Warnings, "without git (--no-git, or not a git repository): the ledger in var/ was written, but nothing is committed or pushed")
	}
	if err := s.checkClock(ctx); err != nil {
		return nil, err
	}
	if err := s.checkSeals(ctx); err != nil {
		return nil, err
	}
	st, tail, err := state.Replay(store, now)
	st, tail, err = s.unsealed(store, st, tail, err)
	if errors.Is(err, state.ErrIncomplete) && !r.opts.DryRun {
		if st, tail, err = r.widen(ctx, store, s, err); errors.Is(err, errkind.ErrInfra) {
			return nil, err
		}
	}
	var ce *ledger.CorruptError
	if errors.As(err, &ce) && r.opts.Repair && !r.opts.DryRun {
		if s.report.Repaired, err = ledgerops.Repair(r.opts.Root, r.opts.SegmentSize, r.clock(), r.git, r.opts.Seals); err != nil {
			return nil, err
		}
		st, tail, err = state.Replay(store, now)
	}
	if errors.As(err, &ce) {
		return nil, errkind.Ledger(err, ledgerops.RepairHint(ce))
	}
	if err != nil {
		return nil, errkind.Ledger(err, "")
	}
	if err := r.checkLedgerBranch(st); err != nil {
		return nil, err
	}
	if err := r.checkLedgerFiles(tail); err != nil {
		return nil, err
	}
	s.newest = tail.TS
	if why := st.Fallback(); why != "" {
		s.report.Warnings = append(s.report.Warnings, why)
	}
	s.checkRules(ctx, st)
	s.j = r.journal(store, st, tail, r.opts.DryRun)
	s.j.Observe(s.ownWrote)
	if err := s.recordSeals(tail); err != nil {
		return nil, err
	}
	return s, nil
}

// journal records for this run, its events marked when its clock is a
// test clock.
func (r *Runner) journal(store *ledger.Store, st *state.State, tail ledger.Tail, dry bool) *state.Journal {
	j := state.NewJournal(store, st, tail, r.opts.Clock, dry)
	if r.opts.TestClock {
		j.MarkClock(ledger.ClockTest)
	}
	return j
}

// clock is the run's clock as ledgerops takes it.
func (r *Runner) clock() ledgerops.Clock {
	return ledgerops.Clock{Now: r.opts.Clock, Test: r.opts.TestClock}
}

// widener is gitops.Repo in a sparse checkout.
type widener interface {
	Widen(ctx context.Context, dir, pattern string) error
}

// widen recovers a sparse checkout whose snapshot cannot stand in for the
// month (another astra version wrote it, or it was damaged): without the
// month's ledger files no run could record anything, and none would ever
// write a snapshot again. It fetches the files of the newest month (which
// opens with a checkpoint, or is the ledger's first) once and replays.
func (r *Runner) widen(ctx context.Context, store *ledger.Store, s *session, incomplete error) (*state.State, ledger.Tail, error) {
	w, ok := r.git.(widener)
	segs, err := store.Segments()
	if !ok || err != nil || len(segs) == 0 {
		return nil, ledger.Tail{}, incomplete
	}
	pattern := "/" + ledger.Dir + "/" + segs[len(segs)-1].Month + ".*"
	if err := w.Widen(ctx, ledger.Dir, pattern); err != nil {
		// The remote or the network, most likely: the next run tries again.
		return nil, ledger.Tail{}, errkind.Infraf("%w; fetching the month's ledger files for it failed: %s", incomplete, r.opts.Redact.String(err.Error()))
	}
	s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("this sparse checkout did not hold the month's ledger files a replay needs, so they were fetched once "+
		"(git sparse-checkout add %s); the snapshot this run writes lets the next fresh checkout start from it again", pattern))
	return state.Replay(store, s.now)
}

func (s *session) state() *state.State { return s.j.State() }

// record appends events. Deciding is single-threaded; while tasks run,
// callers hold s.mu (a chained step is gated under its parent's lock).
func (s *session) record(evs ...*ledger.Event) error { return s.j.Record(evs...) }

// syncSchedules records schedule.created/updated/deleted from the
// difference between the configuration and what the ledger knows.
func (s *session) syncSchedules() error {
	st := s.state()
	var evs []*ledger.Event
	var enabled []pause // enabled again: what fell while disabled is recorded once
	seen := map[string]bool{}
	details := map[string]ScheduleChange{}
	for _, sc := range s.r.cfg.Schedules {
		seen[sc.ID] = true
		h := definitionHash(sc)
		// A schedule the ledger knows as enabled while it is not (or the
		// other way) is updated too: ledgers older than the disabled
		// status learn it on their first run.
		wasDisabled := st.Schedules[sc.ID] != nil && st.Schedules[sc.ID].Disabled
		switch old, ok := st.Known[sc.ID]; {
		case !ok:
			evs = append(evs, scheduleEvent(ledger.ScheduleCreated, sc, h))
			details[sc.ID] = ScheduleChange{Settings: settingsOf(sc)}
			n := NewSchedule{ID: sc.ID, Name: sc.Name, RunNow: sc.RunImmediately}
			if sc.Spec != nil {
				n.Next = sc.Spec.Next(s.now)
			}
			s.report.NewSchedules = append(s.report.NewSchedules, n)
		case old != h || wasDisabled == sc.Enabled:
			evs = append(evs, scheduleEvent(ledger.ScheduleUpdated, sc, h))
			now := settingsOf(sc)
			var before map[string]string
			if prev := st.Schedules[sc.ID]; prev != nil && prev.Settings != nil {
				before = prev.Settings.Fields
			}
			details[sc.ID] = ScheduleChange{Settings: now, Changed: changedSettings(before, now)}
			if wasDisabled && sc.Enabled {
				enabled = append(enabled, pause{sc, st.Schedules[sc.ID].DisabledAt})
			}
		}
	}
	var gone []string
	for id := range st.Known {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		evs = append(evs, &ledger.Event{Event: ledger.ScheduleDeleted, ScheduleID: id, Status: ledger.StatusDeleted})
	}
	s.attribute(evs, details)
	if err := s.j.Record(evs...); err != nil {
		return err
	}
	for _, p := range enabled {
		if err := s.recordPause(p); err != nil {
			return err
		}
	}
	return nil
}

func scheduleEvent(kind ledger.Kind, sc *model.Schedule, hash string) *ledger.Event {
	status := ledger.StatusOK
	if !sc.Enabled {
		status = ledger.StatusDisabled
	}
	return &ledger.Event{Event: kind, ScheduleID: sc.ID, Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool,
		Tier: int(sc.SafetyTier), Status: status, PayloadHash: hash}
}

// definitionHash identifies a schedule's resolved definition, so edits show
// in the ledger as schedule.updated.
func definitionHash(sc *model.Schedule) string {
	b, err := json.Marshal(sc)
	if err != nil {
		panic(err) // the loader only accepts JSON-compatible values
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// traceFor is the trace of a new task: the incoming one when astra was
// started inside a trace, else a new one.
func (r *Runner) traceFor() string {
	if id, _, ok := telemetry.ParseTraceParent(r.opts.TraceParent); ok {
		return id
	}
	return newTraceID()
}

// newTraceID is a W3C trace id: 16 random bytes.
func newTraceID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// traceParent builds the W3C traceparent of a run: its span id is derived
// from the run id, so it need not be stored.
func traceParent(traceID, runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return "00-" + traceID + "-" + hex.EncodeToString(sum[:8]) + "-01"
}
