package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/state"
)

// Fan-out. `astra plan` decides and claims what is due exactly as run-due
// does (the same session: every gate, the claims pushed by compare-and-swap)
// but runs nothing: each claim becomes one job of a GitHub Actions matrix,
// and that job takes the claim and runs it with `astra run --claim KEY`.
// GitHub supplies what one runner lacks: machines, runner labels, a time
// limit per job.
//
// A claim made for a job (run.claimed with reason fan_out) is the job's
// only: a job records run.started when it takes it, pushed like a claim,
// so two jobs never run one claim, and the claim's deadline then runs from
// the job's start. Until then the deadline allows for the jobs queued
// ahead of it. A job that dies leaves its claim to expire into lost, as a
// runner that dies does.

// MatrixLimit is the most jobs one GitHub Actions matrix may hold.
const MatrixLimit = 256

// DefaultRunsOn is the runner label of jobs whose schedule, tool and plan
// name none.
const DefaultRunsOn = "ubuntu-latest"

// maxMatrixBytes bounds the matrix: GitHub keeps at most 1 MB of a job's
// outputs, counted as UTF-16, so at most two bytes per byte of UTF-8.
const maxMatrixBytes = 500_000

// jobStartup is what a plan allows, per matrix job queued ahead of a
// claim, for getting a runner, checking out and installing astra.
const jobStartup = time.Minute

// ActionClaimed is the outcome of a task astra plan claimed for a job.
const ActionClaimed = "claimed"

// PlanOptions shape the matrix.
type PlanOptions struct {
	// MaxParallel is the matrix's max-parallel, how many jobs run at once;
	// the others queue, and their claims' deadlines allow for that.
	MaxParallel int
	// RunsOn are the runner labels of jobs whose schedule and tool name
	// none (default DefaultRunsOn).
	RunsOn model.Labels
}

// Job is one job of the matrix: one claimed task.
type Job struct {
	Key      string       `json:"key"`             // astra run --claim KEY
	Schedule string       `json:"schedule"`        // the schedule's id
	Name     string       `json:"name"`            // the job's name in the Actions UI
	RunsOn   model.Labels `json:"runs_on"`         // runs-on
	Group    string       `json:"group"`           // concurrency group: the lane's, else the task's own
	Timeout  int          `json:"timeout_minutes"` // timeout-minutes: the task's wall clock, chained steps included, plus a margin
}

// Plan is what astra plan claimed.
type Plan struct {
	Report      *Report
	Jobs        []Job // highest priority first
	MaxParallel int
}

// Matrix is jobs as a strategy.matrix value: {"include": [...]}.
func Matrix(jobs []Job) []byte {
	if jobs == nil {
		jobs = []Job{}
	}
	b, err := json.Marshal(map[string][]Job{"include": jobs})
	if err != nil {
		panic(err) // strings and numbers only
	}
	return b
}

// Plan is `astra plan`: it decides and claims what is due as RunDue does,
// at most MatrixLimit tasks (Options.Limit), and returns the claims as the
// jobs of a matrix. Nothing runs. Jobs are returned only once their claims
// are pushed (or, in a dry run, would be), even when the plan then fails
// to record something else: the claims are theirs.
func (r *Runner) Plan(ctx context.Context, o PlanOptions) (*Plan, error) {
	if r.opts.Limit > MatrixLimit {
		return nil, errkind.Usagef("a plan claims at most %d tasks, the jobs one GitHub Actions matrix may hold (limit %d)", MatrixLimit, r.opts.Limit)
	}
	o.MaxParallel = min(max(o.MaxParallel, 1), MatrixLimit)
	if len(o.RunsOn) == 0 {
		o.RunsOn = model.Labels{DefaultRunsOn}
	}
	if err := r.pullBeforeFanOut(ctx); err != nil {
		return nil, err
	}
	var f *fanOut
	rep, err := r.run(ctx, "plan", func(s *session) ([]*task, error) {
		f = &fanOut{opts: o} // each round decides afresh
		s.fan = f
		tasks, err := s.decideDue(ctx)
		if err != nil {
			return nil, err
		}
		return tasks, f.build(s, tasks)
	})
	if rep == nil {
		return nil, err
	}
	p := &Plan{Report: rep, MaxParallel: o.MaxParallel}
	if f.dispatched {
		p.Jobs = f.jobs
	}
	return p, err
}

// fanOut is the state of a plan's session: what its claims hold, and the
// jobs they become.
type fanOut struct {
	opts       PlanOptions
	busy       map[string]string // decideDue's busy lanes; this plan's claims join them
	queue      time.Duration     // wall clock and startup of the jobs claimed so far
	jobs       []Job
	dispatched bool // the claims are out: the jobs may run them
}

// lanes watches decideDue's busy lanes. A plan claims one task per lane:
// lane-mates in one matrix would share a concurrency group, where GitHub
// keeps one job pending and cancels the others.
func (f *fanOut) lanes(busy map[string]string) {
	if f != nil {
		f.busy = busy
	}
}

// claim makes t's claim one for a job of the matrix: marked fan_out, with a
// deadline that allows for the jobs queued ahead of it (one job per task,
// MaxParallel at once, in decision order).
func (f *fanOut) claim(s *session, t *task, ev *ledger.Event) {
	if f == nil {
		return
	}
	wall := chainWallClock(s.r.cfg, t.sched)
	ev.Reason = ledger.ReasonFanOut
	ev.ExpiresAt = s.now.Add(f.queue/time.Duration(f.opts.MaxParallel) + wall + claimMargin)
	f.queue += wall + jobStartup
	if t.grant != nil {
		// The approval is consumed with this claim: the job runs the task as
		// approved, with the event that was approved.
		ev.Detail, _ = json.Marshal(state.PlanDetail{Approved: true, Event: json.RawMessage(t.eventData), Action: t.grant.Action})
	}
	if l := t.sched.Lane; l != "" && f.busy != nil {
		f.busy[l] = t.key + " (claimed by this plan)"
	}
	t.outcome.Action = ActionClaimed
}

// build turns the tasks claimed into jobs, and refuses a matrix GitHub
// would not keep or that would carry anything that looks like a secret,
// before any claim goes out.
func (f *fanOut) build(s *session, tasks []*task) error {
	f.jobs = nil
	for _, t := range tasks {
		group := "astra-run-" + t.key
		if t.sched.Lane != "" {
			group = "astra-lane-" + t.sched.Lane
		}
		f.jobs = append(f.jobs, Job{Key: t.key, Schedule: t.sched.ID, Name: jobName(t, s.r.opts.Redact), RunsOn: s.r.cfg.RunsOn(t.sched, f.opts.RunsOn),
			Group: group, Timeout: int((chainWallClock(s.r.cfg, t.sched) + claimMargin + time.Minute - 1) / time.Minute)})
	}
	m := Matrix(f.jobs)
	if len(m) > maxMatrixBytes {
		return errkind.Usagef("the matrix of %d jobs is %d bytes, more than GitHub keeps of a job's outputs; nothing was claimed: plan fewer (--limit)", len(f.jobs), len(m))
	}
	if s.r.opts.Redact.String(string(m)) != string(m) {
		return errkind.Usagef("the matrix would carry text that looks like a secret (in an idempotency key or a runner label); nothing was claimed")
	}
	return nil
}

// dispatch gives the tasks to the matrix's jobs, in place of running
// them: their claims are out.
func (f *fanOut) dispatch() { f.dispatched = true }

// jobName names a job after its schedule: its name, or its id when the
// name reads like a secret ("rotate token abcdefghijkl").
func jobName(t *task, red *redact.Redactor) string {
	name := t.sched.Name
	if red.String(name) != name {
		name = t.sched.ID
	}
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:99]) + "…"
	}
	if t.attempt > 1 {
		name += fmt.Sprintf(" (attempt %d)", t.attempt)
	}
	return name
}

// chainWallClock is how long a run of sc may take, with the steps chained
// after it, which run in the same job.
func chainWallClock(cfg *model.Config, sc *model.Schedule) time.Duration {
	var d time.Duration
	for i := 0; sc != nil && i < model.MaxChainDepth; i++ {
		d += sc.Budget.MaxWallClock.D()
		if sc.ResultRoute.Type != model.RouteChainNext {
			break
		}
		sc = cfg.Schedule(sc.ResultRoute.Schedule)
	}
	return d
}

// pullBeforeFanOut brings the remote's ledger in before a plan or one of
// its jobs decides (rounds does it for a state branch): a job's checkout
// predates the claim its plan pushed, a plan's the outcomes its jobs
// pushed since.
func (r *Runner) pullBeforeFanOut(ctx context.Context) error {
	if r.git == nil || r.opts.DryRun || r.opts.NoPush || r.opts.StateBranch {
		return nil
	}
	return r.pull(ctx)
}

// RunClaim is `astra run --claim KEY`, one job of a plan's matrix: it takes
// the claim its plan made (run.started, pushed before the tool starts),
// runs the task under its budgets, admission first, as run-due runs a task
// (chained steps included), and pushes the outcome as run-due does. A
// claim that is not open for a job is refused, recorded as claim.refused,
// and nothing runs.
func (r *Runner) RunClaim(ctx context.Context, key string) (*Report, error) {
	// The jobs of a matrix share GitHub's job id (the runner id): this one
	// is named after its claim too, so the ledger tells them apart.
	sum := sha256.Sum256([]byte(key))
	r.opts.RunnerID += "-" + hex.EncodeToString(sum[:4])
	if err := r.pullBeforeFanOut(ctx); err != nil {
		return nil, err
	}
	var refused error
	rep, err := r.run(ctx, "run", func(s *session) ([]*task, error) {
		refused = nil // each round decides afresh
		t, reason, why := s.take(key)
		if t == nil {
			ev := &ledger.Event{Event: ledger.ClaimRefused, IdempotencyKey: key, Status: ledger.StatusRefused, Reason: reason,
				Error: why, Runner: r.opts.RunnerID}
			if o := s.state().Open[key]; o != nil {
				ev.ScheduleID, ev.TraceID = o.ScheduleID, o.TraceID
			}
			recorded := " (recorded)"
			if r.opts.DryRun {
				recorded = ""
			}
			refused = errkind.Usagef("claim %s refused: %s; nothing ran%s", key, why, recorded)
			return nil, s.record(ev)
		}
		ev := t.event(ledger.RunStarted, ledger.StatusStarted)
		ev.Runner = r.opts.RunnerID
		ev.ExpiresAt = s.now.Add(chainWallClock(r.cfg, t.sched) + claimMargin)
		return []*task{t}, s.record(ev)
	})
	switch {
	case refused != nil && err != nil:
		return rep, errkind.Default(fmt.Errorf("%w (and recording the refusal failed: %w)", refused, err), errkind.ErrInfra)
	case refused != nil:
		return nil, refused
	}
	return rep, err
}

// take finds the claim key names open for a job and makes it a task; else
// it says why not, as a reason word and in plain words.
func (s *session) take(key string) (t *task, reason, why string) {
	st := s.state()
	o := st.Open[key]
	switch {
	case o == nil && st.DeadLetters[key] != nil:
		return nil, "dead_letter", "it failed every attempt and waits in the dead letter (astra dead-letter list)"
	case o == nil:
		return nil, "not_open", "no claim with this key is open: its run has ended (completed, failed, skipped or lost), or it was never claimed"
	case o.Status != state.OpenClaimed:
		return nil, "not_open", "its run failed and waits for a retry, which a later plan claims"
	case o.Cancelled != nil:
		return nil, "cancelled", fmt.Sprintf("%s cancelled it: %s; a later run records its end", o.Cancelled.By, o.Cancelled.Reason)
	case o.Plan == nil:
		return nil, "not_planned", fmt.Sprintf("runner %s claimed it to run it itself; --claim runs only claims astra plan made", o.Runner)
	case !o.Plan.Started.IsZero():
		return nil, "taken", fmt.Sprintf("runner %s took it at %s", o.Runner, o.Plan.Started.UTC().Format(time.RFC3339))
	case s.now.After(o.Deadline):
		return nil, "expired", fmt.Sprintf("its claim expired at %s; a later plan records it lost and retries it", o.Deadline.UTC().Format(time.RFC3339))
	}
	var sc *model.Schedule
	for _, c := range s.r.cfg.Schedules {
		if c.ID == o.ScheduleID {
			sc = c
		}
	}
	if sc == nil || s.r.cfg.Policies.Tools[sc.TargetTool] == nil {
		return nil, "unknown_schedule", fmt.Sprintf("schedule %s (or its tool) is no longer in the configuration", o.ScheduleID)
	}
	if o.Plan.Approved {
		// Approved and admitted when claimed: the job runs what was
		// approved, and only that (its checkout may hold another commit).
		now, err := s.r.action(sc, o.Plan.Event, false)
		if err != nil {
			return nil, reasonActionChanged, "what the job would run cannot be bound to the approval: " + err.Error()
		}
		if ch := approval.Changes(approval.DecodeAction(o.Plan.Action), now); ch != nil {
			return nil, reasonActionChanged, "what the job would run is not what was approved: " + strings.Join(ch, "; ")
		}
	}
	t = s.newTask(claimKind(o), sc, o.Slot, key, o.Mode, o.Attempt, o.TraceID)
	if o.Plan.Approved {
		t.grant = &state.Approval{Key: key, Slot: o.Slot, Event: o.Plan.Event, Action: o.Plan.Action, Status: ledger.StatusConsumed}
		t.eventData = string(o.Plan.Event)
	}
	return t, "", ""
}

// claimKind says what kind of candidate a planned claim was, as far as
// the ledger tells.
func claimKind(o *state.Open) plan.Kind {
	switch {
	case o.Plan.Approved:
		return plan.KindApproved
	case o.Attempt > 1:
		return plan.KindRetry
	case o.Mode == ledger.ModeManual:
		return plan.KindManual
	case o.Mode == ledger.ModeEvent:
		return plan.KindEvent
	}
	return plan.KindSlot
}
