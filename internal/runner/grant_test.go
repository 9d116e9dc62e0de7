package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/ledger"
)

// lastEvent is the newest event of kind for s.
func (e *env) lastEvent(kind ledger.Kind) *ledger.Event {
	evs := e.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == kind && evs[i].ScheduleID == "s" {
			return &evs[i]
		}
	}
	return nil
}

// A commit pushed onto the approval branch before the merge: the pull
// request's head is not the commit astra wrote, so the merge approves
// nothing, whoever merged it.
func TestExtraCommitOnTheApprovalBranch(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		e.forge.prs[1].HeadSHA = "mallorys-commit"
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		e.runDue("2026-11-22T09:10:00Z")
		ev := e.lastEvent(ledger.ApprovalRefused)
		if e.exec.runs("s") != 0 || ev == nil || ev.Reason != reasonForeignCommit || ev.By != "octocat" || !strings.Contains(ev.Error, "not the commit astra wrote") {
			t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
		}
	})
}

// The tool's script changes after the merge: the approval is refused,
// naming the file and both blob ids.
func TestScriptEditedAfterTheMerge(t *testing.T) {
	e := approvalEnv(t, "")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	if err := os.WriteFile(filepath.Join(e.dir, "t.sh"), []byte("#!/bin/sh\ncurl evil.example\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.runDue("2026-11-22T09:10:00Z")
	ev := e.lastEvent(ledger.ApprovalRefused)
	if e.exec.runs("s") != 0 || ev == nil || ev.Reason != reasonActionChanged || !regexp.MustCompile(`t\.sh changed \(blob [0-9a-f]{7}→[0-9a-f]{7}\)`).MatchString(ev.Error) {
		t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
	}
}

// An approval is checked again when a run is about to use it: GitHub
// failing then leaves it unused and unrefused (check_failed, exit 3), and
// the next run uses it.
func TestApprovalCheckedAgainAtUse(t *testing.T) {
	e := approvalEnv(t, "")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	// Settled by a run that takes only w: approved, not used yet.
	e.runDue("2026-11-22T09:10:00Z", func(o *Options) { o.Filter.Only = []string{"w"} })
	if e.count(ledger.ApprovalApproved, "s") != 1 || e.exec.runs("s") != 0 {
		t.Fatal("the merge was not settled apart from its use")
	}
	e.forge.prErr[1] = errkind.Infraf("forge: read pull request #1: GitHub returned 503")
	_, err := e.runner("2026-11-22T09:20:00Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || e.exec.runs("s") != 0 {
		t.Fatalf("err %v, runs %d", err, e.exec.runs("s"))
	}
	if e.count(ledger.ApprovalUnchecked, "s") != 1 || e.count(ledger.ApprovalRefused, "s") != 0 || e.count(ledger.ApprovalConsumed, "s") != 0 {
		t.Fatal("an outage at use must neither refuse nor consume the approval")
	}
	delete(e.forge.prErr, 1)
	e.runDue("2026-11-22T09:30:00Z")
	if e.exec.runs("s") != 1 || e.count(ledger.ApprovalConsumed, "s") != 1 {
		t.Fatal("the approval did not run once GitHub answered")
	}
}

// failFirst makes the first run of s fail (so it is retried) and later
// ones succeed.
func failFirst(e *env) {
	n := 0
	e.exec.result = func(req executor.Request) executor.Result {
		if req.ScheduleID == "s" && !req.DryRun {
			if n++; n == 1 {
				return executor.Result{Status: executor.StatusFailed, Reason: ledger.ReasonExit, Error: "exit 1"}
			}
		}
		return executor.Result{Status: executor.StatusOK}
	}
}

// A retry of an approved run runs under the approval its first attempt
// consumed, while the action is still the one approved.
func TestRetryOfAnApprovedRunWhileTheActionHolds(t *testing.T) {
	e := approvalEnv(t, "")
	failFirst(e)
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	e.runDue("2026-11-22T09:11:00Z")
	if e.exec.runs("s") != 2 || e.count(ledger.ApprovalRequested, "s") != 1 || e.count(ledger.RunCompleted, "s") != 1 {
		t.Fatalf("runs %d, requests %d", e.exec.runs("s"), e.count(ledger.ApprovalRequested, "s"))
	}
}

// The approver leaves the role before the retry: the retry does not run
// under her approval; the slot goes to the dead letter, the refusal says
// who and why.
func TestRetryNeedsTheApproverStillInRole(t *testing.T) {
	e := approvalEnv(t, "")
	failFirst(e)
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	e.cfg.Policies.Roles["founder"] = []string{"hubot"}
	rep := e.runDue("2026-11-22T09:11:00Z")
	ev := e.lastEvent(ledger.ApprovalRefused)
	if e.exec.runs("s") != 1 || ev == nil || ev.Reason != reasonNotApprover || ev.By != "octocat" || !strings.Contains(ev.Error, "may no longer approve") {
		t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
	}
	if o := outcome(t, rep, "s"); !o.DeadLettered {
		t.Fatalf("s: %+v", o)
	}
}

// GitHub not answering whether the approver of a consumed approval is
// still in the role is an outage: the retry waits, and the run ends as
// one (exit 3), never 0.
func TestRetryApproverCheckOutage(t *testing.T) {
	e := approvalEnv(t, "")
	failFirst(e)
	e.cfg.Policies.Roles["founder"] = []string{"@octo/founders"}
	e.forge.approvers["octocat"] = true
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	e.forge.approverErr = errkind.Infraf("forge: check whether octocat is in @octo/founders: GitHub returned 503")
	rep, err := e.runner("2026-11-22T09:11:00Z").RunDue(context.Background())
	if o := outcome(t, rep, "s"); o.Action != ActionDeferred || !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("s: %s %s; the run ends with %v", o.Action, o.Reason, err)
	}
	e.forge.approverErr = nil
	e.runDue("2026-11-22T09:12:00Z")
	if e.exec.runs("s") != 2 {
		t.Fatalf("ran %d times once GitHub answered", e.exec.runs("s"))
	}
}

// The payload is edited before the retry: it would not run what was
// approved, so the slot goes to the dead letter, recorded with what
// changed and who had approved; released, it asks for a new approval.
func TestRetryAfterThePayloadChanged(t *testing.T) {
	e := approvalEnv(t, "")
	failFirst(e)
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	e.cfg.Schedule("s").Payload = map[string]any{"env": "staging"}
	rep := e.runDue("2026-11-22T09:11:00Z")
	ev := e.lastEvent(ledger.ApprovalRefused)
	if e.exec.runs("s") != 1 || ev == nil || ev.Reason != reasonActionChanged || ev.By != "octocat" || !strings.Contains(ev.Error, "the payload or event changed") {
		t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
	}
	if o := outcome(t, rep, "s"); !o.DeadLettered || e.count(ledger.RunDeadLettered, "s") != 1 {
		t.Fatalf("s: %+v", o)
	}

	// Released by an approver: it needs an approval of its own.
	if _, _, err := e.runner("2026-11-22T09:12:00Z").ReleaseDeadLetters(context.Background(), "s", ownerIdentity()); err != nil {
		t.Fatal(err)
	}
	rep = e.runDue("2026-11-22T09:13:00Z")
	if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || e.exec.runs("s") != 1 {
		t.Fatalf("the released retry: %s %s, runs %d", o.Action, o.Detail, e.exec.runs("s"))
	}
	req := e.lastEvent(ledger.ApprovalRequested)
	if req.IdempotencyKey != "s@2026-11-22T09:00:00Z" || req.PR != 2 {
		t.Fatalf("request %+v", req)
	}
	e.runDue("2026-11-22T09:14:00Z") // waits, and stays open
	e.forge.merge(t, 2, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:15:00Z")
	if e.exec.runs("s") != 2 || e.count(ledger.RunCompleted, "s") != 1 {
		t.Fatalf("after the new approval: runs %d", e.exec.runs("s"))
	}
}

// The approval pull request changes more than its token (a commit added
// to its branch, whoever wrote it): the merge approves nothing. GitHub
// not answering for the files leaves the request pending.
func TestApprovalPullRequestChangesOtherFiles(t *testing.T) {
	e := approvalEnv(t, "")
	e.forge.files[1] = []forge.PRFile{{Path: "var/approvals/pending/s.token", Status: "added"}, {Path: "t.sh", Status: "modified"}}
	e.forge.filesErr = errkind.Infraf("forge: list the files of pull request #1: GitHub returned 502")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	if _, err := e.runner("2026-11-22T09:10:00Z").RunDue(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("want an outage, got %v", err)
	}
	if e.count(ledger.ApprovalUnchecked, "s") != 1 || e.count(ledger.ApprovalRefused, "s") != 0 {
		t.Fatal("an outage listing the files must leave the request pending")
	}
	e.forge.filesErr = nil
	e.runDue("2026-11-22T09:20:00Z")
	ev := e.lastEvent(ledger.ApprovalRefused)
	if e.exec.runs("s") != 0 || ev == nil || ev.Reason != reasonForeignCommit || !strings.Contains(ev.Error, "pull request #1 changes t.sh, not only var/approvals/pending/s.token") {
		t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
	}
}

// A job of a fan-out plan runs an approved claim only while its checkout
// would run what was approved: the script changed since the plan consumed
// the approval, the claim is refused and nothing runs.
func TestApprovedClaimCheckedByItsJob(t *testing.T) {
	e := approvalEnv(t, "")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	p := e.plan("2026-11-22T09:10:00Z", PlanOptions{MaxParallel: 1})
	if !strings.Contains(keys(p.Jobs), "s@2026-11-22T09:00:00Z") {
		t.Fatalf("the plan did not claim the approved run: %s", keys(p.Jobs))
	}
	if err := os.WriteFile(filepath.Join(e.dir, "t.sh"), []byte("#!/bin/sh\ncurl evil.example\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := e.runner("2026-11-22T09:11:00Z").RunClaim(context.Background(), "s@2026-11-22T09:00:00Z")
	if err == nil || !strings.Contains(err.Error(), "what the job would run is not what was approved: t.sh changed") || e.exec.runs("s") != 0 {
		t.Fatalf("RunClaim = %v, runs %d", err, e.exec.runs("s"))
	}
	if ev := e.lastEvent(ledger.ClaimRefused); ev == nil || ev.Reason != reasonActionChanged {
		t.Fatalf("claim refusal %+v", ev)
	}
}
