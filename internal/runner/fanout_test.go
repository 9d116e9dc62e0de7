package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/state"
)

const fanSchedules = `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, priority: 9}
  - {id: b, name: b, cron: "0 9 * * *", target_tool: work, priority: 5, budget: {max_wall_clock: 20m}}
  - {id: c, name: c, cron: "0 9 * * *", target_tool: work, priority: 1}
`

// plan runs astra plan at now and fails the test on an error.
func (e *env) plan(now string, o PlanOptions, mods ...func(*Options)) *Plan {
	e.t.Helper()
	p, err := e.runner(now, mods...).Plan(context.Background(), o)
	if err != nil {
		e.t.Fatalf("plan at %s: %v", now, err)
	}
	return p
}

// withPolicies adds a policies file and reloads the configuration.
func (e *env) withPolicies(yaml string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "policies", "extra.yaml"), []byte(yaml), 0o644); err != nil {
		e.t.Fatal(err)
	}
	cfg, diags, err := config.Load(e.dir)
	if err != nil || diags.Errors() > 0 {
		e.t.Fatalf("config: %v %v", err, diags)
	}
	e.cfg = cfg
}

func keys(jobs []Job) string {
	var ks []string
	for _, j := range jobs {
		ks = append(ks, j.Key)
	}
	return strings.Join(ks, " ")
}

// planABC is an environment where a plan at 09:00:30 claimed a, b and c
// for jobs, two at once.
func planABC(t *testing.T) (*env, *Plan) {
	t.Helper()
	e := newEnv(t, fanSchedules)
	e.runDue("2026-11-22T08:00:00Z")
	return e, e.plan("2026-11-22T09:00:30Z", PlanOptions{MaxParallel: 2})
}

// A plan claims without running anything; its claims are marked for jobs
// and their deadlines allow for the jobs queued ahead (two at once, one
// minute of start-up each).
func TestPlanClaimsForJobs(t *testing.T) {
	e, p := planABC(t)
	if got := keys(p.Jobs); got != "a@2026-11-22T09:00:00Z b@2026-11-22T09:00:00Z c@2026-11-22T09:00:00Z" {
		t.Fatalf("jobs: %s", got)
	}
	if len(e.exec.ran) != 0 {
		t.Fatalf("a plan ran tools: %v", e.exec.ran)
	}
	if j := p.Jobs[1]; j.Timeout != 30 || j.Group != "astra-run-b@2026-11-22T09:00:00Z" || strings.Join(j.RunsOn, ",") != DefaultRunsOn {
		t.Errorf("job b: %+v", j)
	}
	now := time.Date(2026, 11, 22, 9, 0, 30, 0, time.UTC)
	want := map[string]time.Time{
		"a": now.Add(5*time.Minute + claimMargin),                                 // first in line
		"b": now.Add((5*time.Minute+jobStartup)/2 + 20*time.Minute + claimMargin), // after a, two at once
		"c": now.Add((25*time.Minute+2*jobStartup)/2 + 5*time.Minute + claimMargin),
	}
	for _, ev := range e.events() {
		if ev.Event == ledger.RunClaimed {
			if ev.Reason != ledger.ReasonFanOut || !ev.ExpiresAt.Equal(want[ev.ScheduleID].Truncate(time.Second)) {
				t.Errorf("claim of %s: reason %q, deadline %s, want %s", ev.ScheduleID, ev.Reason, ev.ExpiresAt, want[ev.ScheduleID])
			}
		}
	}
}

// A job's run.started moves its claim's deadline to the job's own start;
// the claims of jobs not started yet keep theirs.
func TestJobStartMovesTheDeadline(t *testing.T) {
	e, _ := planABC(t)
	job := e.clone()
	rep, err := job.runner("2026-11-22T09:20:00Z").RunClaim(context.Background(), "c@2026-11-22T09:00:00Z")
	if err != nil || outcome(t, rep, "c").Action != ActionRan {
		t.Fatalf("job c: %v %+v", err, rep)
	}
	check := e.clone()
	st, _, err := state.Replay(ledger.Open(check.dir, 0), time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	o := st.Open["b@2026-11-22T09:00:00Z"]
	if o == nil || o.Plan == nil || !o.Plan.Started.IsZero() {
		t.Fatalf("b's claim: %+v", o)
	}
	if _, err := job.runner("2026-11-22T09:30:00Z").RunClaim(context.Background(), "b@2026-11-22T09:00:00Z"); err != nil {
		t.Fatal(err)
	}
	var started ledger.Event
	for _, ev := range e.events() {
		if ev.Event == ledger.RunStarted && ev.ScheduleID == "b" {
			started = ev
		}
	}
	if !strings.HasPrefix(started.Runner, "test-") || !started.ExpiresAt.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("b's run.started: %+v", started)
	}
}

// All of a plan's jobs may run at once, so a claim is admitted only if its
// cost cap fits beside the caps of the claims made before it; the rest are
// skipped as run-due skips what would not fit beside its running runs.
func TestPlanAdmitsTheBatch(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, priority: 9, budget: {max_cost_usd: 0.45}}
  - {id: b, name: b, cron: "0 9 * * *", target_tool: work, priority: 5, budget: {max_cost_usd: 0.45}}
  - {id: c, name: c, cron: "0 9 * * *", target_tool: work, priority: 1, budget: {max_cost_usd: 0.45}}
`)
	e.withPolicies("budget: {daily_limit_usd: 1.00}\n")
	e.runDue("2026-11-22T08:00:00Z")
	p := e.plan("2026-11-22T09:00:30Z", PlanOptions{MaxParallel: 3})
	if got := keys(p.Jobs); got != "a@2026-11-22T09:00:00Z b@2026-11-22T09:00:00Z" {
		t.Fatalf("jobs: %s", got)
	}
	if o := outcome(t, p.Report, "c"); o.Action != ActionSkipped || o.Reason != ledger.ReasonBudget || !strings.Contains(o.Detail, "$0.90 held") {
		t.Fatalf("c: %+v", o)
	}
}

// A job admits its task as it starts, as run-due admits each run: spend
// recorded since the plan counts (here another runner's run, admitted
// beside the plan's open claim, that reported past its own cap). A task
// that no longer fits is skipped, which ends its claim.
func TestRunClaimAdmitsAtStart(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, budget: {max_cost_usd: 0.45}}
  - {id: spender, name: spender, cron: "5 9 * * *", target_tool: work, budget: {max_cost_usd: 0.55}}
`)
	e.withPolicies("budget: {daily_limit_usd: 1.00}\n")
	e.runDue("2026-11-22T08:00:00Z")
	if p := e.plan("2026-11-22T09:00:30Z", PlanOptions{}); len(p.Jobs) != 1 {
		t.Fatalf("jobs: %+v", p.Jobs)
	}
	e.exec.result = func(req executor.Request) executor.Result {
		return executor.Result{Status: executor.StatusOK, Usage: ledger.Usage{Cost: 80 * money.Dollar / 100}}
	}
	e.clone().runDue("2026-11-22T09:05:30Z") // another runner spends $0.80 meanwhile, past its $0.55 cap
	rep, err := e.clone().runner("2026-11-22T09:06:00Z").RunClaim(context.Background(), "a@2026-11-22T09:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, rep, "a"); o.Action != ActionSkipped || o.Reason != ledger.ReasonBudget {
		t.Fatalf("a: %+v", o)
	}
	if e.exec.runs("a") != 0 || e.count(ledger.RunSkipped, "a") != 1 {
		t.Fatalf("a ran %d times, %d skips", e.exec.runs("a"), e.count(ledger.RunSkipped, "a"))
	}
}

// Two jobs take the same claim: whichever pushes run.started first runs
// it; the other, checked out before and racing, finds it taken on the
// remote ledger. The tool runs once; the refusal is recorded.
func TestRunClaimTakenOnce(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.plan("2026-11-22T09:00:30Z", PlanOptions{})
	first, second := e.clone(), e.clone()
	var err error
	e.exec.result = func(executor.Request) executor.Result {
		// The first job's tool runs: its claim is taken, and pushed.
		_, err = second.runner("2026-11-22T09:00:41Z").RunClaim(context.Background(), "a@2026-11-22T09:00:00Z")
		return executor.Result{Status: executor.StatusOK}
	}
	if _, ferr := first.runner("2026-11-22T09:00:40Z").RunClaim(context.Background(), "a@2026-11-22T09:00:00Z"); ferr != nil {
		t.Fatalf("first job: %v", ferr)
	}
	if !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), "took it at 2026-11-22T09:00:40Z") {
		t.Fatalf("second job: %v", err)
	}
	if e.exec.runs("a") != 1 || e.count(ledger.RunCompleted, "a") != 1 || e.count(ledger.ClaimRefused, "a") != 1 {
		t.Fatalf("ran %d times, %d completions, %d refusals", e.exec.runs("a"), e.count(ledger.RunCompleted, "a"), e.count(ledger.ClaimRefused, "a"))
	}
}

// A plan claims at most a matrix; what is due beyond its limit waits for
// the next plan. A plan whose claims cannot be pushed hands out no jobs,
// and one whose matrix would carry a secret claims nothing.
func TestPlanLimits(t *testing.T) {
	e := newEnv(t, fanSchedules)
	e.runDue("2026-11-22T08:00:00Z")
	if _, err := e.runner("2026-11-22T09:00:30Z", func(o *Options) { o.Limit = MatrixLimit + 1 }).Plan(context.Background(), PlanOptions{}); !errors.Is(err, errkind.ErrUsage) {
		t.Fatalf("a plan beyond the matrix limit: %v", err)
	}
	e.remote.pushErrs = []error{errors.New("network down")}
	p, err := e.runner("2026-11-22T09:00:30Z").Plan(context.Background(), PlanOptions{})
	if !errors.Is(err, errkind.ErrInfra) || p == nil || len(p.Jobs) != 0 {
		t.Fatalf("claims not pushed: %v %+v", err, p)
	}
	p = e.plan("2026-11-22T09:01:30Z", PlanOptions{}, func(o *Options) { o.Limit = 2 })
	if len(p.Jobs) != 2 || p.Report.OverLimit != 1 {
		t.Fatalf("jobs %d, over the limit %d", len(p.Jobs), p.Report.OverLimit)
	}

	// A name that reads like a secret names its job by the schedule's id;
	// a key that does is refused before any claim goes out.
	s := newEnv(t, `schedules:
  - {id: x, name: rotate token abcdefghijklmnop, cron: "0 9 * * *", target_tool: work}
`)
	s.runDue("2026-11-22T08:00:00Z")
	if p := s.plan("2026-11-22T09:00:30Z", PlanOptions{}); len(p.Jobs) != 1 || p.Jobs[0].Name != "x" {
		t.Fatalf("jobs: %+v", p.Jobs)
	}
	mods := func(o *Options) { o.Redact = redact.New("2026-11-23T09:00:00Z") }
	if _, err := s.runner("2026-11-23T09:00:30Z", mods).Plan(context.Background(), PlanOptions{}); !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), "looks like a secret") {
		t.Fatalf("a secret in the matrix: %v", err)
	}
	if s.count(ledger.RunClaimed, "x") != 1 {
		t.Fatal("claims went out for a matrix that was refused")
	}
}

// An emergency stop holds the jobs of a plan made before it: a job that
// takes its claim afterwards runs nothing.
func TestPauseHoldsPlannedJobs(t *testing.T) {
	e, _ := planABC(t)
	if _, err := e.runner("2026-11-22T09:01:00Z").PauseAll(context.Background(), true, "incident", ownerIdentity()); err != nil {
		t.Fatal(err)
	}
	job := e.clone()
	rep, err := job.runner("2026-11-22T09:02:00Z").RunClaim(context.Background(), "a@2026-11-22T09:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if o := outcome(t, rep, "a"); o.Action != ActionSkipped || o.Reason != ledger.ReasonPaused || len(e.exec.ran) != 0 {
		t.Fatalf("job a under pause: %s %s; ran %v", o.Action, o.Reason, e.exec.ran)
	}
	// Skipped, the claim is closed: it is not found lost and retried
	// after the resume.
	if _, err := e.runner("2026-11-22T12:00:00Z").PauseAll(context.Background(), false, "over", ownerIdentity()); err != nil {
		t.Fatal(err)
	}
	e.runDue("2026-11-22T12:00:30Z")
	for _, ev := range e.events() {
		if ev.ScheduleID == "a" && ev.Slot.Hour() == 9 && (ev.Event == ledger.RunRetryScheduled || ev.Reason == ledger.ReasonLost) {
			t.Fatalf("a's paused claim came back: %+v", ev)
		}
	}
}
