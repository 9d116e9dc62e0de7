package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
)

const shipDaily = `schedules:
  - {id: s, name: s, cron: "0 9 * * *", target_tool: ship}
  - {id: w, name: w, cron: "0 * * * *", target_tool: work}
`

// approvalEnv is a repository whose schedule s waits for pull request #1,
// with or without an approval secret.
func approvalEnv(t *testing.T, secret string) *env {
	t.Helper()
	e := newEnv(t, shipDaily)
	e.secret = []byte(secret)
	e.runDue("2026-11-22T08:00:00Z")
	rep := e.runDue("2026-11-22T09:00:30Z")
	if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || o.PR != 1 {
		t.Fatalf("s: %s PR %d %s", o.Action, o.PR, o.Detail)
	}
	return e
}

// forEachSecret runs a test without and with ASTRA_APPROVAL_SECRET: the
// ledger, not the signature, is what must hold.
func forEachSecret(t *testing.T, test func(t *testing.T, e *env)) {
	for _, secret := range []string{"", "a-long-approval-secret"} {
		name := "without secret"
		if secret != "" {
			name = "with secret"
		}
		t.Run(name, func(t *testing.T) { test(t, approvalEnv(t, secret)) })
	}
}

func writeToken(t *testing.T, e *env, raw []byte) {
	t.Helper()
	p := filepath.Join(e.dir, "var/approvals/pending/s.token")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastError is the error text of the newest event of kind for s.
func (e *env) lastError(kind ledger.Kind) string {
	evs := e.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == kind && evs[i].ScheduleID == "s" {
			return evs[i].Error
		}
	}
	return ""
}

// A merge by an approver approves one run: the next run executes it once
// and records the approval consumed; later runs do not run it again.
func TestMergedByApproverRunsOnce(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		rep := e.runDue("2026-11-22T09:10:00Z")
		if o := outcome(t, rep, "s"); o.Action != ActionRan {
			t.Fatalf("after the merge: %s %s", o.Action, o.Detail)
		}
		e.runDue("2026-11-22T09:20:00Z")
		if e.exec.runs("s") != 1 || e.count(ledger.ApprovalConsumed, "s") != 1 {
			t.Fatalf("ran %d times, consumed %d", e.exec.runs("s"), e.count(ledger.ApprovalConsumed, "s"))
		}
		if _, err := os.Stat(filepath.Join(e.dir, "var/approvals/pending/s.token")); err == nil {
			t.Error("the used token file was left in the checkout")
		}
	})
}

// A token committed straight to the branch names another merged pull
// request (an unrelated one an approver merged): it approves nothing, is
// recorded once, and does not stop the real approval.
func TestForgedTokenNamingAnotherMergedPR(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		e.forge.prs[7] = &forge.PR{Number: 7, State: "closed", Merged: true, MergedBy: "octocat", MergeCommitSHA: "docs"}
		forged := strings.Replace(string(e.forge.tokens[1]), `"pr": 1`, `"pr": 7`, 1)
		writeToken(t, e, []byte(forged))
		e.runDue("2026-11-22T09:10:00Z")
		e.runDue("2026-11-22T09:12:00Z")
		if e.exec.runs("s") != 0 {
			t.Fatal("a forged token ran the tool")
		}
		if n := e.count(ledger.ApprovalRefused, "s"); n != 1 {
			t.Fatalf("%d refusals recorded, want 1", n)
		}
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		e.runDue("2026-11-22T09:20:00Z")
		if e.exec.runs("s") != 1 {
			t.Fatal("the real approval did not run")
		}
	})
}

// The token is edited on the pull request's branch (slot, schedule or
// expiry) before an approver merges: the merged bytes are not the ones
// astra wrote, so the request is refused and the next slot asks again.
func TestTokenEditedOnTheBranch(t *testing.T) {
	for _, edit := range []struct{ field, from, to string }{
		{"expiry", `"expires_at": "2026-11-23T09:00:00Z"`, `"expires_at": "2027-11-23T09:00:00Z"`},
		{"slot", `"idempotency_key": "s@2026-11-22T09:00:00Z"`, `"idempotency_key": "s@2026-11-23T09:00:00Z"`},
		{"schedule", `"schedule_id": "s"`, `"schedule_id": "w"`},
	} {
		t.Run(edit.field, func(t *testing.T) {
			forEachSecret(t, func(t *testing.T, e *env) {
				tok := string(e.forge.tokens[1])
				if !strings.Contains(tok, edit.from) {
					t.Fatalf("token lacks %s:\n%s", edit.from, tok)
				}
				e.forge.tokens[1] = []byte(strings.Replace(tok, edit.from, edit.to, 1))
				e.forge.merge(t, 1, "octocat", e.dir, "s")
				e.runDue("2026-11-22T09:10:00Z")
				if e.exec.runs("s") != 0 {
					t.Fatal("an edited token ran the tool")
				}
				if why := e.lastError(ledger.ApprovalRefused); !strings.Contains(why, "is not the one astra wrote") {
					t.Fatalf("refusal: %q", why)
				}
				rep := e.runDue("2026-11-23T09:00:30Z")
				if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || o.PR != 2 {
					t.Fatalf("the next slot: %s PR %d", o.Action, o.PR)
				}
			})
		})
	}
}

// A byte-identical copy of the pending token placed on the branch before
// the merge approves nothing (recorded as ignored, once), and the real
// merge still counts.
func TestPlantedIdenticalToken(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		writeToken(t, e, e.forge.tokens[1])
		e.runDue("2026-11-22T09:10:00Z")
		e.runDue("2026-11-22T09:11:00Z")
		if e.exec.runs("s") != 0 || e.count(ledger.ApprovalIgnored, "s") != 1 {
			t.Fatalf("runs %d, ignored %d", e.exec.runs("s"), e.count(ledger.ApprovalIgnored, "s"))
		}
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		e.runDue("2026-11-22T09:20:00Z")
		if e.exec.runs("s") != 1 {
			t.Fatal("the legitimate merge was ignored")
		}
	})
}

// A merge by someone who may not approve is refused and settles the
// request: the next slot opens a new pull request instead of waiting
// forever for the merged one.
func TestMergeByNonApproverThenNextSlot(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		e.forge.merge(t, 1, "mallory", e.dir, "s")
		rep := e.runDue("2026-11-22T09:10:00Z")
		if e.exec.runs("s") != 0 {
			t.Fatal("a non-approver's merge ran the tool")
		}
		if why := e.lastError(ledger.ApprovalRefused); !strings.Contains(why, "merged by mallory, who may not approve") {
			t.Fatalf("refusal: %q", why)
		}
		if len(rep.Approvals) != 1 || rep.Approvals[0].Event != string(ledger.ApprovalRefused) {
			t.Fatalf("the report does not say what happened: %+v", rep.Approvals)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "var/approvals/pending/s.token")); err == nil {
			t.Error("the refused token stayed in the checkout")
		}
		rep = e.runDue("2026-11-23T09:00:30Z")
		if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || o.PR != 2 {
			t.Fatalf("the next slot: %s PR %d %s", o.Action, o.PR, o.Detail)
		}
	})
}

// A merge after the request expired is recorded as expired, never
// closed (it is merged), and every other schedule keeps running.
func TestLateMergeAfterExpiry(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		e.forge.closeErr = errors.New("must not close a merged pull request")
		rep, err := e.runner("2026-11-23T10:00:30Z").RunDue(context.Background())
		if err != nil {
			t.Fatalf("a late merge stopped the run: %v", err)
		}
		if e.exec.runs("s") != 0 {
			t.Fatal("an expired approval ran")
		}
		if o := outcome(t, rep, "w"); o.Action != ActionRan {
			t.Fatalf("w: %s", o.Action)
		}
		if why := e.lastError(ledger.ApprovalExpired); !strings.Contains(why, "merged by octocat") || !strings.Contains(why, "after the request expired") {
			t.Fatalf("expiry: %q", why)
		}
	})
}

// A request that expires unmerged has its pull request closed; a failure
// to close it is recorded and the run goes on.
func TestExpiryClosesThePullRequest(t *testing.T) {
	e := approvalEnv(t, "")
	rep, err := e.runner("2026-11-23T10:00:30Z").RunDue(context.Background())
	if err != nil || len(e.forge.closed) != 1 || e.count(ledger.ApprovalExpired, "s") != 1 {
		t.Fatalf("err %v, closed %v", err, e.forge.closed)
	}
	if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || o.PR != 2 {
		t.Fatalf("the slot after expiry: %s PR %d", o.Action, o.PR)
	}
	e.forge.closeErr = errors.New("GitHub returned 502")
	_, err = e.runner("2026-11-24T10:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("a close failure: %v", err)
	}
	if e.count(ledger.ApprovalExpired, "s") != 2 || e.count(ledger.RunCompleted, "w") < 2 {
		t.Fatal("the expiry or the other schedule's run was lost")
	}
}

// A used token put back, as it was or re-encoded, never runs again.
func TestReplayedAndReencodedToken(t *testing.T) {
	forEachSecret(t, func(t *testing.T, e *env) {
		used := e.forge.tokens[1]
		e.forge.merge(t, 1, "octocat", e.dir, "s")
		e.runDue("2026-11-22T09:10:00Z")
		writeToken(t, e, used)
		e.runDue("2026-11-22T09:20:00Z")
		writeToken(t, e, []byte(strings.ReplaceAll(string(used), "  ", "    ")))
		e.runDue("2026-11-22T09:30:00Z")
		if e.exec.runs("s") != 1 {
			t.Fatalf("ran %d times", e.exec.runs("s"))
		}
		evs := e.events()
		var reasons []string
		for _, ev := range evs {
			if ev.Event == ledger.ApprovalRefused {
				reasons = append(reasons, ev.Error)
			}
		}
		if len(reasons) != 2 || !strings.Contains(reasons[0], "already used") || !strings.Contains(reasons[1], "not one astra wrote") {
			t.Fatalf("refusals: %q", reasons)
		}
	})
}

// GitHub errors while settling one approval (403, 404, a rate limit) are
// recorded against that approval; every other schedule runs and the run
// exits as infrastructure. Once GitHub answers, the merge counts.
func TestForgeErrorsWhileSettling(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"forbidden", &forge.APIError{Op: "GET /repos/o/r/pulls/1", Status: 403, Message: "Resource not accessible by integration"}},
		{"not found", &forge.APIError{Op: "GET /repos/o/r/pulls/1", Status: 404, Message: "Not Found"}},
		{"rate limit", &forge.RateLimitError{Op: "GET /repos/o/r/pulls/1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := approvalEnv(t, "")
			e.forge.merge(t, 1, "octocat", e.dir, "s")
			e.forge.prErr[1] = c.err
			rep, err := e.runner("2026-11-22T10:00:30Z").RunDue(context.Background())
			if !errors.Is(err, errkind.ErrInfra) {
				t.Fatalf("want an infrastructure error at the end, got %v", err)
			}
			if o := outcome(t, rep, "w"); o.Action != ActionRan {
				t.Fatalf("the other schedule: %s", o.Action)
			}
			if e.count(ledger.ApprovalUnchecked, "s") != 1 || e.exec.runs("s") != 0 {
				t.Fatal("the failure was not recorded, or the approval ran unchecked")
			}
			delete(e.forge.prErr, 1)
			e.runDue("2026-11-22T10:10:00Z")
			if e.exec.runs("s") != 1 {
				t.Fatal("the merge did not count once GitHub answered")
			}
		})
	}
}

// A merger whose team GitHub cannot answer for is not refused: the
// request stays pending, recorded as checked-failed, the run ends as an
// outage, and the next run decides once GitHub answers.
func TestTeamOutageWhileCheckingMerger(t *testing.T) {
	e := approvalEnv(t, "")
	e.cfg.Policies.Roles["founder"] = []string{"@octo/founders"}
	e.forge.merge(t, 1, "dana", e.dir, "s")
	e.forge.approverErr = errkind.Infraf("forge: check whether dana is in @octo/founders: GitHub returned 503")
	_, err := e.runner("2026-11-22T09:10:00Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("want an outage at the end, got %v", err)
	}
	if e.count(ledger.ApprovalRefused, "s") != 0 || e.count(ledger.ApprovalUnchecked, "s") != 1 || e.exec.runs("s") != 0 {
		t.Fatalf("refused %d, unchecked %d, ran %d: an outage must leave the request pending",
			e.count(ledger.ApprovalRefused, "s"), e.count(ledger.ApprovalUnchecked, "s"), e.exec.runs("s"))
	}
	if msg := e.lastError(ledger.ApprovalUnchecked); !strings.Contains(msg, "checking who merged pull request #1") || !strings.Contains(msg, "503") {
		t.Errorf("check_failed says %q", msg)
	}
	e.forge.approverErr = nil
	e.forge.approvers["dana"] = true
	e.runDue("2026-11-22T09:20:00Z")
	if e.exec.runs("s") != 1 {
		t.Fatal("the merge did not count once GitHub answered")
	}
}

// A person whose team GitHub cannot answer for is neither allowed nor
// refused: the decision fails as an outage and nothing is recorded; a
// person who is not in the team is refused and recorded.
func TestTeamOutageOnADecision(t *testing.T) {
	e := newEnv(t, shipDaily)
	e.runDue("2026-11-22T08:00:00Z")
	e.cfg.Policies.Roles["founder"] = []string{"@octo/founders"}
	dana := identity.Identity{Login: "dana", Source: identity.SourceGitHubActions, Verified: true}
	e.forge.approverErr = errkind.Infraf("forge: check whether dana is in @octo/founders: cannot reach GitHub")
	err := e.runner("2026-11-22T08:10:00Z").Permit(context.Background(), model.VerbApprove, "s", dana, e.cfg.Schedule("s"))
	if !errors.Is(err, errkind.ErrInfra) || errors.Is(err, errkind.ErrRefused) {
		t.Fatalf("a decision during an outage = %v, want infrastructure", err)
	}
	if n := e.count(ledger.ActionRefused, ""); n != 0 {
		t.Fatalf("an outage recorded %d refusal(s)", n)
	}
	e.forge.approverErr = nil
	err = e.runner("2026-11-22T08:20:00Z").Permit(context.Background(), model.VerbApprove, "s", dana, e.cfg.Schedule("s"))
	if !errors.Is(err, errkind.ErrRefused) || e.count(ledger.ActionRefused, "") != 1 {
		t.Fatalf("a decision by a non-member = %v, %d refusals recorded", err, e.count(ledger.ActionRefused, ""))
	}
}

// A refused pull request creation (Actions may not create pull requests)
// is recorded against the request, the other schedules run, and the next
// run opens it.
func TestPullRequestCreationRefused(t *testing.T) {
	e := newEnv(t, shipDaily)
	e.runDue("2026-11-22T08:00:00Z")
	e.forge.ensureErr = &forge.APIError{Op: "POST /repos/o/r/pulls", Status: 403, Message: "GitHub Actions is not permitted to create or approve pull requests."}
	rep, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "not permitted to create") {
		t.Fatalf("got %v", err)
	}
	if o := outcome(t, rep, "w"); o.Action != ActionRan {
		t.Fatalf("w: %s", o.Action)
	}
	if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || !strings.Contains(o.Detail, "could not be opened") {
		t.Fatalf("s: %s %s", o.Action, o.Detail)
	}
	if e.count(ledger.ApprovalRequested, "s") != 1 {
		t.Fatal("the request was not recorded")
	}
	e.forge.ensureErr = nil
	rep = e.runDue("2026-11-22T09:05:00Z")
	if len(rep.Approvals) != 1 || rep.Approvals[0].PR != 1 || e.count(ledger.ApprovalRequested, "s") != 2 {
		t.Fatalf("the next run did not open the pull request: %+v", rep.Approvals)
	}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 1 {
		t.Fatal("the approval did not run")
	}
}

// A schedule changed between the request and the merge: what was approved
// is not what would run, so nothing runs.
func TestDefinitionChangedBeforeMerge(t *testing.T) {
	e := approvalEnv(t, "")
	e.cfg.Schedule("s").Payload = map[string]any{"env": "prod"}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 0 || !strings.Contains(e.lastError(ledger.ApprovalRefused), "definition changed") {
		t.Fatalf("runs %d, refusal %q", e.exec.runs("s"), e.lastError(ledger.ApprovalRefused))
	}
}

// An event that needs an approval shows its payload in the pull request
// and, once approved, the tool receives exactly that event.
func TestApprovedEventRunsWithItsPayload(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: s, name: s, on_event: order.paid, target_tool: ship}
`)
	e.runDue("2026-11-22T08:00:00Z")
	_, err := e.runner("2026-11-22T09:00:00Z").Trigger(context.Background(), TriggerRequest{Event: "order.paid",
		Payload: []byte(`{"order": 42}`), By: ownerIdentity()})
	if err != nil {
		t.Fatal(err)
	}
	if body := e.forge.requests[0].Body; !strings.Contains(body, `"order": 42`) {
		t.Fatalf("the pull request does not show the event:\n%s", body)
	}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.exec.result = func(req executor.Request) executor.Result {
		if req.Event != `{"order":42}` { // stored compact in the ledger
			return executor.Result{Status: executor.StatusFailed, Error: "got event " + req.Event}
		}
		return executor.Result{Status: executor.StatusOK}
	}
	rep := e.runDue("2026-11-22T09:10:00Z")
	if o := outcome(t, rep, "s"); o.Action != ActionRan {
		t.Fatalf("s: %s %s", o.Action, o.Detail)
	}
}

// A schedule that needs two approvers does not run on a merge alone: the
// merge is refused for too few approvers (nobody signed before it), and
// nothing runs.
func TestOneMergeDoesNotMeetTwoApprovers(t *testing.T) {
	e := newEnv(t, strings.Replace(shipDaily, "target_tool: ship}", "target_tool: ship, approvals_required: 2}", 1))
	e.runDue("2026-11-22T08:00:00Z")
	if o := outcome(t, e.runDue("2026-11-22T09:00:30Z"), "s"); o.Action != ActionAwaitingApproval || o.PR != 1 {
		t.Fatalf("s: %s PR %d %s", o.Action, o.PR, o.Detail)
	}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 0 || e.count(ledger.ApprovalConsumed, "s") != 0 {
		t.Fatalf("ran %d times, consumed %d", e.exec.runs("s"), e.count(ledger.ApprovalConsumed, "s"))
	}
	if ev := e.lastEvent(ledger.ApprovalRefused); ev == nil || ev.Reason != reasonTooFew || !strings.Contains(ev.Error, "the merge of #1 has 1 (octocat)") {
		t.Fatalf("refusal: %+v", ev)
	}
}
