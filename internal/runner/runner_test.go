package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
)

const daily = `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work}
`

// Another runner pushed first three times: each time this runner re-reads
// the remote ledger and decides again, waiting longer each round; on the
// fourth its claim goes out and the slot runs once.
func TestClaimRaceLostThenWon(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n <= 4 { // pushes 2-4: this run's claim
			e.remote.advance()
		}
	}
	rep := e.runDue("2026-11-22T09:00:30Z")
	if o := outcome(t, rep, "a"); o.Action != ActionRan {
		t.Fatalf("a: %s %s", o.Action, o.Detail)
	}
	if rep.Raced != 3 {
		t.Errorf("raced %d times, want 3", rep.Raced)
	}
	if len(e.sleeps) != 3 {
		t.Fatalf("waited %d times, want 3: %v", len(e.sleeps), e.sleeps)
	}
	if e.exec.runs("a") != 1 || e.count(ledger.RunClaimed, "a") != 1 || e.count(ledger.RunCompleted, "a") != 1 {
		t.Fatalf("ran %d times, %d claims, %d completions", e.exec.runs("a"), e.count(ledger.RunClaimed, "a"), e.count(ledger.RunCompleted, "a"))
	}
}

// The backoff between claim rounds grows, with jitter, so racing runners
// spread out instead of colliding again.
func TestClaimBackoffGrows(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n <= 7 {
			e.remote.advance()
		}
	}
	e.runDue("2026-11-22T09:00:30Z")
	if len(e.sleeps) != 6 {
		t.Fatalf("waits: %v", e.sleeps)
	}
	// Each wait is drawn from [base*2^k, 2*base*2^k): the last lower bound
	// is above the first upper bound.
	if e.sleeps[5] <= 2*e.sleeps[0] {
		t.Errorf("the backoff does not grow: %v", e.sleeps)
	}
}

// Two runners decide the same slot: the second's claim push is rejected
// because the first pushed its claim, and after re-reading the ledger it
// leaves the slot alone. The tool runs once.
func TestClaimRaceLostToSameSlot(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	other := e.clone()
	e.remote.beforePush = func(n int) {
		if n == 2 { // this runner's claim: the other one gets there first
			other.runDue("2026-11-22T09:00:40Z")
		}
	}
	rep := e.runDue("2026-11-22T09:00:30Z")
	if len(rep.Outcomes) != 0 {
		t.Errorf("the runner that lost still reports %+v", rep.Outcomes[0])
	}
	if e.exec.runs("a") != 1 || e.count(ledger.RunClaimed, "a") != 1 {
		t.Fatalf("ran %d times with %d claims, want once", e.exec.runs("a"), e.count(ledger.RunClaimed, "a"))
	}
}

// A push rejected after the tools ran: the outcomes are appended again on
// top of the remote ledger, which stays one verifiable chain.
func TestOutcomePushRejectedOnce(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n == 3 { // the outcome push
			e.remote.advance()
		}
	}
	rep := e.runDue("2026-11-22T09:00:30Z")
	if !rep.Pushed || rep.Raced != 1 || rep.Spilled != "" {
		t.Fatalf("pushed %v raced %d spilled %q", rep.Pushed, rep.Raced, rep.Spilled)
	}
	if e.count(ledger.RunCompleted, "a") != 1 || e.exec.runs("a") != 1 {
		t.Fatal("the outcome was lost or the tool ran again")
	}
}

// When the outcome push keeps being rejected, the events go to a spill
// ref and the run fails as infrastructure, with git's rejection in the
// chain; the next run pushes the commit it kept first, finds the spill's
// events on the branch and deletes it. Nothing is lost or doubled.
func TestSpillAfterLastRound(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n >= 3 { // every outcome push
			e.remote.advance()
		}
	}
	rep, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !errors.Is(err, gitops.ErrRejected) {
		t.Fatalf("want an infrastructure error caused by rejected pushes, got %v", err)
	}
	if rep == nil || rep.Spilled == "" || len(e.remote.spills) != 1 {
		t.Fatalf("no spill: %+v", rep)
	}
	if e.count(ledger.RunCompleted, "a") != 0 {
		t.Fatal("the outcome reached the branch although every push was rejected")
	}
	e.remote.beforePush = nil
	rep = e.runDue("2026-11-22T09:10:00Z")
	if rep.Merged != 0 || len(e.remote.spills) != 0 {
		t.Fatalf("spill merged again (%d events) or not deleted (%d left)", rep.Merged, len(e.remote.spills))
	}
	if e.count(ledger.RunCompleted, "a") != 1 || e.exec.runs("a") != 1 {
		t.Fatalf("after the merge: %d completions, %d runs", e.count(ledger.RunCompleted, "a"), e.exec.runs("a"))
	}
}

// A merged spill that cannot be moved aside is the remote's failure, not
// a task's: the run exits 3, and a later run moves it.
func TestSpillMoveFailsIsInfra(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n >= 3 {
			e.remote.advance()
		}
	}
	if _, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("want a spill, got %v", err)
	}
	e.remote.beforePush = nil
	e.remote.deleteErr = errors.New("connection reset")
	rep, err := e.runner("2026-11-22T09:10:00Z").RunDue(context.Background())
	if errkind.ExitCode(err, false) != errkind.ExitInfra || !strings.Contains(err.Error(), "moving merged spill") {
		t.Fatalf("exit %d: %v", errkind.ExitCode(err, false), err)
	}
	if rep.Failed() {
		t.Fatalf("a spill deletion counted as a failed task: %+v", rep.Errors)
	}
	e.remote.deleteErr = nil
	e.runDue("2026-11-22T09:20:00Z")
	if len(e.remote.spills) != 0 {
		t.Fatal("the spill was never deleted")
	}
}

// A claim that cannot be pushed for another reason stops the run before
// any tool starts; the error keeps its cause.
func TestClaimPushFailsNothingRuns(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	cause := errors.New("connection reset")
	e.remote.pushErrs = []error{cause}
	rep, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !errors.Is(err, cause) {
		t.Fatalf("got %v", err)
	}
	if e.exec.runs("a") != 0 {
		t.Fatal("a tool ran without a pushed claim")
	}
	if o := outcome(t, rep, "a"); o.Action != ActionSkipped {
		t.Errorf("a: %s", o.Action)
	}
}

// Retries back off exponentially (5 s, then 10 s) and the third failure
// dead-letters the slot; a budget stop dead-letters at once.
func TestRetryAndDeadLetterArithmetic(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, retry: {max_attempts: 3, backoff_base: 5s, backoff_max: 8s}}
  - {id: b, name: b, cron: "0 9 * * *", target_tool: work}
`)
	e.exec.result = func(req executor.Request) executor.Result {
		if req.ScheduleID == "b" {
			return executor.Result{Status: "failed", Reason: ledger.ReasonBudgetExceeded, Exceeded: "cost", Error: "spent $0.60 of $0.50"}
		}
		return executor.Result{Status: "failed", Reason: "exit", Error: "exit status 1"}
	}
	e.runDue("2026-11-22T08:00:00Z")
	first := e.runDue("2026-11-22T09:00:30Z")
	if o := outcome(t, first, "a"); o.RetryAt != time.Date(2026, 11, 22, 9, 0, 35, 0, time.UTC) {
		t.Fatalf("first retry at %v, want 09:00:35", o.RetryAt)
	}
	if o := outcome(t, first, "b"); !o.DeadLettered {
		t.Fatal("a run that blew its budget must be dead-lettered, not retried")
	}
	second := e.runDue("2026-11-22T09:00:36Z")
	if o := outcome(t, second, "a"); o.Attempt != 2 || o.RetryAt != time.Date(2026, 11, 22, 9, 0, 44, 0, time.UTC) {
		t.Fatalf("second attempt %d, retry at %v; want 2 and 09:00:44 (10 s capped at 8 s)", o.Attempt, o.RetryAt)
	}
	if rep := e.runDue("2026-11-22T09:00:40Z"); len(rep.Outcomes) != 0 {
		t.Fatalf("a retry ran before its backoff: %+v", rep.Outcomes[0])
	}
	third := e.runDue("2026-11-22T09:00:45Z")
	if o := outcome(t, third, "a"); o.Attempt != 3 || !o.DeadLettered {
		t.Fatalf("third attempt %d dead-lettered %v", o.Attempt, o.DeadLettered)
	}
	if rep := e.runDue("2026-11-22T09:30:00Z"); len(rep.Outcomes) != 0 {
		t.Fatal("a dead letter ran again")
	}
	if e.exec.runs("a") != 3 || e.exec.runs("b") != 1 || e.count(ledger.RunDeadLettered, "") != 2 {
		t.Fatalf("runs a=%d b=%d, dead letters %d", e.exec.runs("a"), e.exec.runs("b"), e.count(ledger.RunDeadLettered, ""))
	}
}

// A chain that loops (validate refuses one; a stale configuration could
// still hold it) stops at the depth bound, with the tool calls of the
// earlier steps counted against the next.
func TestChainBound(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, result_route: {type: chain_next, schedule: b}}
  - {id: b, name: b, on_event: never, target_tool: work}
`)
	e.cfg.Schedule("b").ResultRoute = model.ResultRoute{Type: model.RouteChainNext, Schedule: "a"}
	e.exec.result = func(executor.Request) executor.Result {
		return executor.Result{Status: executor.StatusOK, Usage: ledger.Usage{ToolCalls: 1}}
	}
	e.runDue("2026-11-22T08:00:00Z")
	e.runDue("2026-11-22T09:00:30Z")
	n := len(e.exec.ran)
	if n != model.MaxChainDepth {
		t.Fatalf("the chain ran %d steps, want %d", n, model.MaxChainDepth)
	}
	if used := e.exec.ran[n-1].ToolCallsUsed; used != int64(n-1) {
		t.Errorf("the last step saw %d earlier tool calls, want %d", used, n-1)
	}
}

// Every error a Runner method returns carries one of the kinds.
func TestErrorsHaveKinds(t *testing.T) {
	e := newEnv(t, daily)
	e.git.commitErr = errors.New("disk full")
	_, err := e.runner("2026-11-22T08:00:00Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.HasPrefix(err.Error(), "committing the ledger: disk full") {
		t.Fatalf("commit failure: %v", err)
	}
	e.git.commitErr = nil
	_, err = e.runner("2026-11-22T08:00:00Z").Rollback(context.Background(), "nope", identity.PullRequestIdentity("octocat"), false)
	if !errors.Is(err, errkind.ErrUsage) {
		t.Fatalf("unknown run: %v", err)
	}
	_, err = e.runner("2026-11-22T08:00:00Z").Trigger(context.Background(), TriggerRequest{Event: "nothing.listens"})
	if !errors.Is(err, errkind.ErrUsage) {
		t.Fatalf("unknown event: %v", err)
	}
}

// TestLooseObjectsWarned: go-git never packs what it writes, and each run
// stores the ledger file it appended to in full; a checkout that lives on
// is told to let git pack, once git's own bounds are passed.
func TestLooseObjectsWarned(t *testing.T) {
	e := newEnv(t, daily)
	warned := func(rep *Report) bool {
		return slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "git maintenance start") })
	}
	if rep := e.runDue("2026-11-22T08:00:00Z"); warned(rep) {
		t.Fatalf("warned with no loose objects: %q", rep.Warnings)
	}
	e.git.loose = gitops.Loose{Objects: 512, Bytes: 2 << 30}
	if rep := e.runDue("2026-11-22T09:00:30Z"); !warned(rep) {
		t.Fatalf("not warned about 2 GiB of loose objects: %q", rep.Warnings)
	}
}

// A spill holding anything but outcomes (here an approval anyone who can
// push could have written) is refused whole, even unsealed, and recorded.
func TestSpillWithAnApprovalRefused(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z")
	line := `{"seq":1,"ts":"2026-11-22T08:30:00Z","event":"approval.approved","schedule_id":"a","slot":"2026-11-22T09:00:00Z","status":"approved","by":"octocat","via":"signature","prev":""}`
	e.remote.spills["evil-1"] = map[string][]byte{spillEventsFile: []byte(line + "\n")}
	rep := e.runDue("2026-11-22T08:40:00Z")
	if rep.Merged != 0 || len(e.remote.spills) != 0 {
		t.Fatalf("merged %d events, %d spills left", rep.Merged, len(e.remote.spills))
	}
	if e.count(ledger.SpillRefused, "") != 1 || e.count(ledger.ApprovalApproved, "a") != 0 {
		t.Fatalf("%d spill.refused, %d approval.approved", e.count(ledger.SpillRefused, ""), e.count(ledger.ApprovalApproved, "a"))
	}
}
