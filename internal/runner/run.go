package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/telemetry"
)

// task is one run the gates let through (or a dry run of one).
type task struct {
	kind      plan.Kind
	sched     *model.Schedule
	tool      *model.Tool
	slot      time.Time
	key       string
	mode      string
	attempt   int
	traceID   string
	grant     *state.Approval // the approval this run consumes
	rollback  bool            // the tool's compensating command (astra rollback), not a run
	previous  string          // chain context: the previous step's output
	eventData string          // triggering event payload, JSON
	depth     int             // chain depth, 0 for a top-level run
	inherited model.ToolLists // tool lists of the chain steps before this one
	by        string          // who triggered the event that started it, when someone did
	toolCalls int64           // tool calls spent by earlier steps of the chain
	draft     *executor.Result
	outcome   *Outcome
}

func (t *task) runID() string { return ledger.RunID(t.key, t.attempt) }

// toolLists are the tool lists that bind t: its schedule's, its actor's
// and those of the chain steps before it.
func (t *task) toolLists(p *model.Policies) model.ToolLists { return p.ToolLists(t.sched, t.inherited) }

// event starts a ledger event about t.
func (t *task) event(kind ledger.Kind, status string) *ledger.Event {
	sc := t.sched
	attempt := t.attempt
	if attempt == 1 {
		attempt = 0 // the first attempt is the default: keep lines lean
	}
	// Every event about a run says what it hands its tool (payload hash) and
	// under which autonomy level it was decided.
	return &ledger.Event{Event: kind, ScheduleID: sc.ID, Slot: t.slot, IdempotencyKey: t.key, Actor: sc.Actor,
		Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: status, TraceID: t.traceID,
		Mode: t.mode, Attempt: attempt, PayloadHash: approval.PayloadHash(sc.Payload, json.RawMessage(t.eventData)), Autonomy: sc.Autonomy.Short()}
}

// RunDue is `astra run-due`: everything due now, under every gate.
func (r *Runner) RunDue(ctx context.Context) (*Report, error) {
	return r.run(ctx, "run-due", func(s *session) ([]*task, error) {
		return s.decideDue(ctx)
	})
}

// Manual is `astra run <schedule>`: one run outside the schedule, through
// every gate, by someone the policies allow to run it. key is the
// idempotency key (default: one per minute).
func (r *Runner) Manual(ctx context.Context, sc *model.Schedule, key string, id identity.Identity) (*Report, error) {
	if err := r.Permit(ctx, model.VerbRun, sc.Name, id, sc); err != nil {
		return nil, err
	}
	return r.run(ctx, "run", func(s *session) ([]*task, error) {
		if key == "" {
			key = sc.ID + "@manual:" + s.now.Truncate(time.Minute).Format(ledger.TimeLayout)
		}
		t := s.newTask(plan.KindManual, sc, s.now, key, ledger.ModeManual, 1, "")
		return s.decideOne(ctx, t)
	})
}

// run drives one run: decide, push the claims, execute, push the outcomes.
// When another runner pushed first, the decisions are taken again on top of
// its ledger (bounded).
func (r *Runner) run(ctx context.Context, command string, decide func(*session) ([]*task, error)) (rep *Report, err error) {
	ctx, span := r.opts.Tracer.Start(ctx, "astra "+command, telemetry.Parent(r.opts.TraceParent),
		telemetry.Attrs(telemetry.AttrDryRun, r.opts.DryRun))
	defer func() { span.End(err) }()
	if p := r.opts.Progress; p != nil && command != "plan" { // plan runs nothing; its output is the matrix
		p.Begin(command, r.opts.Clock().UTC(), r.opts.DryRun)
	}
	release, err := r.recoverLeftovers(ctx, command)
	defer release()
	if err == nil {
		rep, err = r.rounds(ctx, command, decide)
	}
	if rep != nil && ctx.Err() != nil {
		rep.Interrupted = true
	}
	r.finishReport(rep)
	if err == nil && rep != nil && len(rep.InfraErrors) > 0 {
		err = errkind.Infraf("%d git or GitHub failure(s) this run outlived (recorded; everything else ran): %s",
			len(rep.InfraErrors), strings.Join(rep.InfraErrors, "; "))
	}
	if rep != nil && r.opts.CI && len(r.opts.Secret) == 0 && r.forge != nil && r.approvalsPossible() {
		rep.Warnings = append(rep.Warnings, "ASTRA_APPROVAL_SECRET is not set, so approval tokens are not signed: the ledger still binds each "+
			"approval to its pull request, but set the secret for a second layer (`openssl rand -hex 32 | gh secret set ASTRA_APPROVAL_SECRET`)")
	}
	return rep, errkind.Default(err, errkind.ErrInfra)
}

// approvalsPossible reports whether any schedule can need an approval.
func (r *Runner) approvalsPossible() bool {
	for _, sc := range r.cfg.Schedules {
		if tool := r.cfg.Policies.Tools[sc.TargetTool]; tool != nil && len(r.cfg.Policies.ApprovalReasons(sc, tool)) > 0 {
			return true
		}
	}
	return false
}

// rounds opens a session, brings it up to date, decides with decide and
// pushes the claims before anything runs; a claim push that loses a race
// starts a new round on the remote's ledger, up to maxRounds.
func (r *Runner) rounds(ctx context.Context, command string, decide func(*session) ([]*task, error)) (*Report, error) {
	if err := r.pullState(ctx); err != nil {
		return nil, err
	}
	raced := 0 // carried across rounds: each round opens a new session
	for round := 0; ; round++ {
		s, err := r.open(ctx, command)
		if err != nil {
			return nil, err
		}
		s.report.Raced = raced
		if err := s.prepare(ctx); err != nil {
			return nil, err
		}
		// Decisions are written together: nothing outside this process
		// sees them before the claim push (approval requests excepted,
		// which flush).
		var tasks []*task
		err = s.j.Batch(func() (err error) {
			tasks, err = decide(s)
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(tasks) > 0 && !r.opts.DryRun {
			// Claims go out before anything runs: whoever pushes first owns
			// the slots, so no slot runs twice.
			err := s.publish(ctx, "claim")
			if errors.Is(err, errRaced) && round < maxRounds {
				s.report.Raced++
				raced = s.report.Raced
				if err = s.resync(ctx); err == nil {
					continue
				}
			}
			if err != nil {
				return s.report, s.notClaimed(tasks, err, round+1)
			}
		}
		s.execute(ctx, tasks)
		if command == "run-due" && !r.opts.DryRun {
			if err := s.tick(); err != nil {
				return s.report, err
			}
		}
		if err := s.finish(ctx); err != nil {
			return s.report, err
		}
		if s.report.Pushed {
			s.deleteSpills(ctx)
		}
		return s.report, nil
	}
}

// tick records this cron tick and what it came to: in the commit of the
// run's events not yet published, or, when the run recorded nothing, alone
// once the last recorded tick is state.TickEvery old. A run whose events
// all went out already (an outcome pushed at once) makes no commit for
// its tick: that outcome stays the newest commit.
func (s *session) tick() error {
	pending, recorded := len(s.j.Recorded()) > s.pushed, len(s.j.Recorded()) > 0
	if last := s.state().LastTick; !pending && (recorded || last != nil && s.now.Sub(last.At) < state.TickEvery) {
		return nil
	}
	rep := s.report
	d, _ := json.Marshal(state.TickDetail{Ran: rep.Count(ActionRan), Failed: rep.Count(ActionFailed) + rep.Count(ActionLost),
		Skipped: rep.Count(ActionSkipped) + rep.Count(ActionMissed), AwaitingApproval: rep.Count(ActionAwaitingApproval)})
	status := ledger.StatusOK
	if rep.Failed() {
		status = ledger.StatusFailed
	}
	return s.record(&ledger.Event{Event: ledger.Tick, Status: status, Runner: s.r.opts.RunnerID, Detail: d})
}

// prepare brings a session up to date before it decides: the clock's
// warnings, spilled events merged, schedules' definitions recorded,
// approvals moved on.
func (s *session) prepare(ctx context.Context) error {
	s.report.Warnings = append(s.report.Warnings, plan.ClockWarnings(s.r.cfg, s.state(), s.newest, s.now)...)
	if err := s.mergeSpills(ctx); err != nil {
		return errkind.Infraf("merging spilled events: %w", err)
	}
	if err := s.syncSchedules(); err != nil {
		return err
	}
	return s.checkApprovals(ctx)
}

// notClaimed marks tasks skipped because their claims could not be
// pushed (err, after tries attempts) and returns the error to stop with.
// Only a lost race is another runner's doing; anything else (a lock, the
// network) is said as it is.
func (s *session) notClaimed(tasks []*task, err error, tries int) error {
	reason, why := reasonNotClaimed, "claim not recorded: "+s.r.opts.Redact.String(err.Error())+"; nothing ran, the next run takes it"
	if errors.Is(err, gitops.ErrProtected) {
		why = "claim not pushed: the remote refuses pushes to " + s.r.git.Branch() + " (protected branch); nothing ran"
	}
	if errors.Is(err, errRaced) {
		reason, why = ledger.ReasonDuplicate, "claim not pushed: other runners kept pushing first; the next run takes it"
		err = errkind.Infraf("other runners pushed first %d times; nothing ran: %w", tries, err)
	}
	for _, t := range tasks {
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, reason, why
	}
	return err
}

// decideDue gates every due candidate in order, recording each decision,
// and returns the tasks that may run.
func (s *session) decideDue(ctx context.Context) ([]*task, error) {
	cands := plan.Due(s.r.cfg, s.state(), s.now, s.r.opts.Filter)
	busy := s.busyLanes()
	s.fan.lanes(busy)
	var tasks []*task
	processed := 0
	for _, c := range cands {
		if done, err := s.recordUnrunnable(c); done || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if processed >= s.r.opts.Limit {
			s.report.OverLimit++
			continue
		}
		if l := c.Schedule.Lane; l != "" && busy[l] != "" {
			// Another runner is running a lane-mate: leave the slot due
			// (nothing recorded) for the run after it ends.
			t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, c.Attempt, "")
			t.outcome.Action, t.outcome.Reason = ActionDeferred, "lane_busy"
			t.outcome.Detail = fmt.Sprintf("lane %s is busy with %s; the next run takes it", l, busy[l])
			continue
		}
		processed++
		t := s.dueTask(c)
		ok, err := s.gate(ctx, t)
		if err == nil {
			err = s.recordDropped(c)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// recordUnrunnable records a candidate that cannot run, whatever the
// gates say: a slot missed beyond its catch-up window, a claim lost, an
// open slot gone stale. It reports whether c was one.
func (s *session) recordUnrunnable(c plan.Candidate) (bool, error) {
	switch c.Kind {
	case plan.KindMissed:
		t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, 1, "")
		t.outcome.Missed, t.outcome.MissedMore = c.Missed, c.MissedMore
		if err := s.skip(t, ledger.ReasonMissed, fmt.Sprintf("%s late, beyond the catch-up window %s (policy %s)",
			s.now.Sub(c.Slot).Round(time.Minute), c.Schedule.Catchup.Window.D(), c.Schedule.Catchup.Policy)); err != nil {
			return true, err
		}
		return true, s.recordDropped(c)
	case plan.KindLost:
		t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, c.Attempt, c.Open.TraceID)
		return true, s.lost(t, c.Open)
	case plan.KindStale:
		t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, c.Attempt, c.Open.TraceID)
		return true, s.stale(t, c.Open)
	case plan.KindEarly:
		t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, 1, "")
		if err := s.skip(t, ledger.ReasonDuplicate, "a run whose clock was ahead took this slot early, before a clock correction: a slot runs once"); err != nil {
			return true, err
		}
		return true, s.recordDropped(c)
	}
	return false, nil
}

// dueTask is the task of a candidate the gates decide on: in the trace of
// its open slot, or of its approval, running what was approved.
func (s *session) dueTask(c plan.Candidate) *task {
	trace := ""
	if c.Open != nil {
		trace = c.Open.TraceID
	}
	t := s.newTask(c.Kind, c.Schedule, c.Slot, c.Key, c.Mode, c.Attempt, trace)
	t.outcome.Missed, t.outcome.MissedMore = c.Missed, c.MissedMore
	if c.Kind == plan.KindApproved {
		if a := s.state().Approvals[c.Schedule.ID]; a != nil {
			if a.TraceID != "" {
				t.traceID, t.outcome.TraceID = a.TraceID, a.TraceID
			}
			t.eventData = string(a.Event) // what was approved is what runs
		}
	}
	return t
}

// busyLanes names, per lane, a run holding it: a live claim (before its
// deadline) of a schedule in that lane, recorded by any runner before this
// round decided anything.
func (s *session) busyLanes() map[string]string {
	lane := map[string]string{}
	for _, sc := range s.r.cfg.Schedules {
		if sc.Lane != "" {
			lane[sc.ID] = sc.Lane
		}
	}
	busy := map[string]string{}
	if len(lane) == 0 {
		return busy
	}
	for key, o := range s.state().Open {
		l := lane[o.ScheduleID]
		if l == "" || o.Status != state.OpenClaimed || s.now.After(o.Deadline) {
			continue
		}
		if by := key + " (runner " + o.Runner + ")"; busy[l] == "" || by < busy[l] {
			busy[l] = by // the same name every time, whatever the map order
		}
	}
	return busy
}

// decideOne gates a single manual or event task.
func (s *session) decideOne(ctx context.Context, t *task) ([]*task, error) {
	if at, done := s.state().Completed(t.key); done {
		t.outcome.Action, t.outcome.Reason = ActionSkipped, ledger.ReasonDuplicate
		t.outcome.Detail = "idempotency key " + t.key + " already completed at " + at.UTC().Format(time.RFC3339)
		return nil, s.record(s.skipEvent(t, ledger.ReasonDuplicate, t.outcome.Detail))
	}
	if _, open := s.state().Open[t.key]; open {
		t.outcome.Action, t.outcome.Reason = ActionSkipped, ledger.ReasonDuplicate
		t.outcome.Detail = "idempotency key " + t.key + " is already running or waiting for a retry"
		return nil, nil
	}
	ok, err := s.gate(ctx, t)
	if err != nil || !ok {
		return nil, err
	}
	return []*task{t}, nil
}

func (s *session) newTask(kind plan.Kind, sc *model.Schedule, slot time.Time, key, mode string, attempt int, trace string) *task {
	if trace == "" {
		trace = s.r.traceFor()
	}
	t := &task{kind: kind, sched: sc, tool: s.r.cfg.Policies.Tools[sc.TargetTool], slot: slot, key: key, mode: mode,
		attempt: max(attempt, 1), traceID: trace}
	t.outcome = &Outcome{ScheduleID: sc.ID, Name: sc.Name, Ref: s.r.cfg.Ref(sc), Key: key, Slot: slot, Kind: string(kind), Tool: sc.TargetTool,
		Actor: sc.Actor, Tier: int(sc.SafetyTier), Attempt: t.attempt, TraceID: trace, Mode: mode}
	s.report.Outcomes = append(s.report.Outcomes, t.outcome)
	return t
}

// gate applies every gate to t and records the decision; true means run.
func (s *session) gate(ctx context.Context, t *task) (bool, error) {
	if why := inputRefused(t); why != "" {
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, ledger.ReasonInvalidInput, why
		ev := s.skipEvent(t, ledger.ReasonInvalidInput, why)
		ev.By = t.by
		return false, s.record(ev)
	}
	d := gate.Check(gate.Input{Schedule: t.sched, Policies: &s.r.cfg.Policies, State: s.state(), Now: s.now, Inherited: t.inherited})
	switch d.Action {
	case gate.Skip:
		if rl := d.RateLimit; rl != nil {
			// Recorded with when it may run: retry_at on the skip.
			t.outcome.Action, t.outcome.Reason, t.outcome.Detail, t.outcome.RateLimit = ActionSkipped, d.Reason, d.Detail, rl
			ev := s.skipEvent(t, d.Reason, d.Detail)
			ev.RetryAt = rl.ResetAt
			return false, s.record(ev)
		}
		return false, s.skip(t, d.Reason, d.Detail)
	case gate.NeedApproval:
		if g := s.state().Granted[t.key]; g != nil && t.kind == plan.KindRetry {
			// Retried under the approval its first attempt consumed.
			if ok, err := s.retryGranted(ctx, t, g); !ok || err != nil {
				return false, err
			}
			break
		}
		if a := s.grantFor(t); a != nil {
			if ok, err := s.useGrant(ctx, t, a); !ok || err != nil {
				return false, err
			}
			t.grant = a
			break
		}
		if a := s.state().Approvals[t.sched.ID]; a != nil {
			t.outcome.PR = a.PR
			detail := fmt.Sprintf("an approval request for %s is open", a.Key)
			switch {
			case a.Status == ledger.StatusApproved:
				detail = fmt.Sprintf("an approval of %s is waiting to run", a.Key)
			case a.Quorum != nil:
				detail = fmt.Sprintf("an approval of %s has %d of the %d approvers it needs", a.Key, len(a.Quorum.Approvers), a.Quorum.Required)
			case a.PR != 0:
				detail = fmt.Sprintf("waiting for pull request #%d (request for %s)", a.PR, a.Key)
			}
			return false, s.wait(t, detail)
		}
		return false, s.requestApproval(ctx, t, d)
	}
	if ok, err := s.admitTier2(ctx, t); !ok || err != nil {
		return false, err
	}
	return true, s.claim(t)
}

// inputRefused says how what t would hand its tool does not match the
// tool's input_schema: its payload, and the event that started it; ""
// when it matches or the tool declares no schema.
func inputRefused(t *task) string {
	if t.tool == nil || t.tool.Input == nil {
		return ""
	}
	if model.ChecksPayload(t.sched) {
		if err := t.tool.Input.Check(model.PayloadOf(t.sched)); err != nil {
			return fmt.Sprintf("payload does not match tool %q's input_schema: %v", t.tool.Name, err)
		}
	}
	if t.eventData != "" {
		if err := t.tool.Input.CheckJSON([]byte(t.eventData)); err != nil {
			return fmt.Sprintf("event payload does not match tool %q's input_schema: %v", t.tool.Name, err)
		}
	}
	return ""
}

// wait holds t back while another approval of its schedule is open: a
// slot is recorded as skipped; a retry stays open (a skip would end it)
// and waits for its turn.
func (s *session) wait(t *task, detail string) error {
	if t.kind == plan.KindRetry {
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionDeferred, ledger.ReasonApprovalPending, detail
		return nil
	}
	return s.skip(t, ledger.ReasonApprovalPending, detail)
}

// claim records that this runner owns t's slot until its deadline.
func (s *session) claim(t *task) error {
	ev := t.event(ledger.RunClaimed, ledger.StatusClaimed)
	ev.Runner = s.r.opts.RunnerID
	ev.Limit = gate.Reserve(t.sched, t.tool) // held against the global budget until the outcome
	ev.ExpiresAt = s.now.Add(t.sched.Budget.MaxWallClock.D() + claimMargin)
	s.fan.claim(s, t, ev)
	evs := []*ledger.Event{ev}
	if g := t.grant; g != nil {
		// Consumed as the run starts: one approval is one run, even if this
		// runner dies before it finishes.
		c := t.event(ledger.ApprovalConsumed, ledger.StatusConsumed)
		c.By, c.PR, c.ExpiresAt = g.By, g.PR, g.ExpiresAt
		c.Detail = detail(state.ApprovalDetail{Token: g.Token, Action: g.Action, Via: g.Via, Signer: g.Signer})
		evs = append(evs, c)
		s.dropToken(t.sched.ID)
	}
	return s.record(evs...)
}

func (s *session) skipEvent(t *task, reason, detail string) *ledger.Event {
	ev := t.event(ledger.RunSkipped, ledger.StatusSkipped)
	ev.Reason, ev.Error = reason, detail
	return ev
}

func (s *session) skip(t *task, reason, detail string) error {
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, reason, detail
	if reason == ledger.ReasonMissed {
		t.outcome.Action = ActionMissed
	}
	return s.record(s.skipEvent(t, reason, detail))
}

// lost records a claim whose runner died before recording an outcome as a
// failure, then retries it per policy: never re-run while a claim is live.
// A claim a person cancelled meanwhile ends as cancelled instead.
func (s *session) lost(t *task, o *state.Open) error {
	detail := fmt.Sprintf("claimed by %s at %s; no outcome by its deadline %s", o.Runner, o.ClaimedAt.Format(time.RFC3339), o.Deadline.Format(time.RFC3339))
	ev := t.event(ledger.RunFailed, ledger.StatusFailed)
	ev.Reason, ev.Error = ledger.ReasonLost, detail
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionLost, ledger.ReasonLost, detail
	if c := o.Cancelled; c != nil {
		// Cancelled while it ran: it ends as cancelled, not retried.
		ev.Reason, ev.Error = ledger.ReasonCancelled, fmt.Sprintf("cancelled by %s: %s (%s)", c.By, c.Reason, detail)
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionFailed, ev.Reason, ev.Error
		return s.record(ev)
	}
	return s.record(append([]*ledger.Event{ev}, s.retryOrDeadLetter(t, detail)...)...)
}

// stale dead-letters a retry that came due longer ago than the schedule's
// catch-up window: run now, it would be a late run nobody expects; a
// person may still release it.
func (s *session) stale(t *task, o *state.Open) error {
	detail := fmt.Sprintf("retry due at %s is %s late, beyond the catch-up window %s (policy %s); not run: release it with `astra dead-letter retry %s`",
		o.RetryAt.UTC().Format(time.RFC3339), s.now.Sub(o.RetryAt).Round(time.Minute), plan.Window(t.sched), t.sched.Catchup.Policy, t.key)
	ev := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
	ev.Attempt, ev.Reason, ev.Error = max(t.attempt-1, 1), ledger.ReasonMissed, detail
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail, t.outcome.DeadLettered = ActionMissed, ledger.ReasonMissed, detail, true
	return s.record(ev)
}

// retryOrDeadLetter follows a failure: another attempt after the backoff,
// or the dead letter after the last one.
func (s *session) retryOrDeadLetter(t *task, why string) []*ledger.Event {
	r := t.sched.Retry
	if t.attempt < r.MaxAttempts && t.tool != nil && t.tool.NonIdempotent() && !t.sched.RetryNonIdem {
		ev := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
		ev.Attempt, ev.Reason = t.attempt, ledger.ReasonNonIdempotent
		ev.Error = fmt.Sprintf("%s; not retried: tool %s declares idempotent: false (retry_non_idempotent: true on the schedule retries it); release it with `astra dead-letter retry %s`",
			why, t.tool.Name, t.key)
		t.outcome.DeadLettered = true
		return []*ledger.Event{ev}
	}
	if t.attempt < r.MaxAttempts {
		ev := t.event(ledger.RunRetryScheduled, ledger.StatusRetry)
		ev.Attempt = t.attempt + 1
		ev.RetryAt = s.now.Add(r.Backoff(t.attempt))
		ev.Error = why
		t.outcome.RetryAt = ev.RetryAt
		return []*ledger.Event{ev}
	}
	ev := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
	ev.Attempt, ev.Error = t.attempt, why
	t.outcome.DeadLettered = true
	return []*ledger.Event{ev}
}

// dryRun invokes a tool in dry-run mode: tools that support it
// run with ASTRA_DRY_RUN=1, others are only described.
func (r *Runner) dryRun(ctx context.Context, t *task) executor.Result {
	req := r.request(t)
	req.DryRun = true
	return r.exec.Run(ctx, req)
}

func (r *Runner) request(t *task) executor.Request {
	allow, deny := t.toolLists(&r.cfg.Policies).Env()
	return executor.Request{
		ToolAllow: allow, ToolDeny: deny,
		Tool: t.tool, ScheduleID: t.sched.ID, RunID: t.runID(), Slot: t.slot, TraceParent: traceParent(t.traceID, t.runID()),
		Payload: t.sched.Payload, PreviousOutput: t.previous, Memory: r.recall(t, r.opts.Clock()), Event: t.eventData, Dir: r.opts.Root, Budget: t.sched.Budget,
		Pricing:       &r.cfg.Policies.Budget.Pricing,
		ToolCallsUsed: t.toolCalls, Getenv: r.opts.Getenv, Sandbox: r.toolView(t),
	}
}

// tail keeps the last ledger.output_tail bytes of a tool's output.
func (r *Runner) tail(s string) string {
	max := r.opts.OutputTail
	if max <= 0 {
		max = defaultOutputTail
	}
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for i := 0; i < len(s) && i < 4; i++ { // do not start inside a UTF-8 sequence
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return s
}
