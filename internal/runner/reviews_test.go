package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// quorumEnv is a schedule s that needs two approvers of the role founder
// (octocat, alice, bob), waiting for pull request #1.
func quorumEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, strings.Replace(shipDaily, "target_tool: ship}", "target_tool: ship, approvals_required: 2}", 1))
	if err := os.WriteFile(filepath.Join(e.dir, "policies", "p.yaml"), []byte(strings.Replace(testPolicies, "founder: [octocat]", "founder: [octocat, alice, bob]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.withPolicies("{}\n")
	e.runDue("2026-11-22T08:00:00Z")
	if o := outcome(t, e.runDue("2026-11-22T09:00:30Z"), "s"); o.Action != ActionAwaitingApproval || o.PR != 1 {
		t.Fatalf("s: %s PR %d %s", o.Action, o.PR, o.Detail)
	}
	return e
}

// An approving review of the head astra wrote by a second member of the
// role, then a merge, meets two approvers: the run uses the approval,
// which names the reviewer.
func TestReviewAndMergeMeetTwoApprovers(t *testing.T) {
	e := quorumEnv(t)
	e.forge.review(1, "alice", "COMMENTED")
	e.forge.review(1, "alice", "APPROVED")
	e.forge.review(1, "alice", "COMMENTED") // a comment after an approval decides nothing
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 1 || e.count(ledger.ApprovalConsumed, "s") != 1 {
		t.Fatalf("ran %d times, consumed %d; refused: %+v", e.exec.runs("s"), e.count(ledger.ApprovalConsumed, "s"), e.lastEvent(ledger.ApprovalRefused))
	}
	ev := e.lastEvent(ledger.ApprovalApproved)
	if d := detailOfEvent(ev); ev.By != "octocat" || d.Required != 2 || strings.Join(d.Reviewers, ",") != "alice" {
		t.Fatalf("approval: by %s, detail %+v", ev.By, d)
	}
}

// Reviews that do not make a second approver: each is named in the
// refusal, and nothing runs.
func TestReviewsThatDoNotCount(t *testing.T) {
	for name, c := range map[string]struct {
		reviews func(f *fakeForge)
		why     string
	}{
		"outside the role": {func(f *fakeForge) { f.review(1, "mallory", "APPROVED") }, "mallory may not approve"},
		"the merger's own": {func(f *fakeForge) { f.review(1, "octocat", "APPROVED") }, "has 1 (octocat)"},
		"changes requested after": {func(f *fakeForge) {
			f.review(1, "alice", "APPROVED")
			f.review(1, "alice", "CHANGES_REQUESTED")
		}, "alice requested changes"},
		"dismissed": {func(f *fakeForge) {
			f.review(1, "alice", "APPROVED")
			f.reviews[1][0].State = "DISMISSED" // GitHub turns the dismissed review itself
		}, "alice's review was dismissed"},
		"of an earlier head": {func(f *fakeForge) {
			f.review(1, "alice", "APPROVED")
			f.reviews[1][0].CommitID = "0123456789abcdef" // astra pushed a new token since
		}, "alice approved 0123456789ab, not the head astra wrote"},
	} {
		t.Run(name, func(t *testing.T) {
			e := quorumEnv(t)
			c.reviews(e.forge)
			e.forge.merge(t, 1, "octocat", e.dir, "s")
			e.runDue("2026-11-22T09:10:00Z")
			if e.exec.runs("s") != 0 || e.count(ledger.ApprovalApproved, "s") != 0 {
				t.Fatalf("ran %d times, approved %d", e.exec.runs("s"), e.count(ledger.ApprovalApproved, "s"))
			}
			if ev := e.lastEvent(ledger.ApprovalRefused); ev == nil || ev.Reason != reasonTooFew || ev.By != "octocat" || !strings.Contains(ev.Error, c.why) {
				t.Fatalf("refusal: %+v", ev)
			}
		})
	}
}

// GitHub not answering for the reviews is an outage, never a refusal: the
// merge is checked again next run, and then counts.
func TestReviewsOutageIsCheckedAgain(t *testing.T) {
	e := quorumEnv(t)
	e.forge.review(1, "alice", "APPROVED")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.forge.reviewsErr = &forge.APIError{Op: "GET /repos/o/r/pulls/1/reviews", Status: 502, Message: "Bad Gateway"}
	rep, err := e.runner("2026-11-22T10:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("want an infrastructure error at the end, got %v", err)
	}
	if o := outcome(t, rep, "w"); o.Action != ActionRan {
		t.Fatalf("the other schedule: %s", o.Action)
	}
	if e.exec.runs("s") != 0 || e.count(ledger.ApprovalRefused, "s") != 0 || e.count(ledger.ApprovalUnchecked, "s") != 1 {
		t.Fatalf("ran %d, refused %d, unchecked %d", e.exec.runs("s"), e.count(ledger.ApprovalRefused, "s"), e.count(ledger.ApprovalUnchecked, "s"))
	}
	e.forge.reviewsErr = nil
	e.runDue("2026-11-22T10:10:00Z")
	if e.exec.runs("s") != 1 {
		t.Fatalf("ran %d times after GitHub came back", e.exec.runs("s"))
	}
}

// The reviews are read again when the run uses the approval: a review
// dismissed meanwhile (or a reviewer a forged line names) approves
// nothing.
func TestReviewReadAgainAtUse(t *testing.T) {
	e := quorumEnv(t)
	e.forge.review(1, "alice", "APPROVED")
	dismissed := append([]forge.Review(nil), e.forge.reviews[1]...)
	dismissed[0].State = "DISMISSED"
	e.forge.reviewsThen = map[int][]forge.Review{1: dismissed}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 0 || e.count(ledger.ApprovalApproved, "s") != 1 {
		t.Fatalf("ran %d times, approved %d", e.exec.runs("s"), e.count(ledger.ApprovalApproved, "s"))
	}
	if ev := e.lastEvent(ledger.ApprovalRefused); ev == nil || ev.Reason != reasonNotApprover || !strings.Contains(ev.Error, "review of pull request #1 by alice no longer counts") {
		t.Fatalf("refusal: %+v", ev)
	}
}

// A retry under an approval of several approvers runs only while each of
// them may still approve: the reviewer who left the role is named in the
// refusal, and the slot goes to the dead letter.
func TestRetryNeedsEveryApproverStillInRole(t *testing.T) {
	e := quorumEnv(t)
	failFirst(e)
	e.forge.review(1, "alice", "APPROVED")
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	e.runDue("2026-11-22T09:10:00Z")
	if e.exec.runs("s") != 1 {
		t.Fatalf("ran %d times", e.exec.runs("s"))
	}
	e.cfg.Policies.Roles["founder"] = []string{"octocat", "bob"}
	rep := e.runDue("2026-11-22T09:11:00Z")
	ev := e.lastEvent(ledger.ApprovalRefused)
	if e.exec.runs("s") != 1 || ev == nil || ev.Reason != reasonNotApprover || ev.By != "alice" || !strings.Contains(ev.Error, "alice approved") {
		t.Fatalf("runs %d, refusal %+v", e.exec.runs("s"), ev)
	}
	if o := outcome(t, rep, "s"); !o.DeadLettered {
		t.Fatalf("s: %+v", o)
	}
}

// approvals list's preview counts the reviews as the merge would: the
// role's approving reviews of the head astra wrote; an outage is an
// error for the caller to warn of, and a request without a pull request
// has none.
func TestPendingReviews(t *testing.T) {
	e := quorumEnv(t)
	e.forge.review(1, "alice", "APPROVED")
	e.forge.review(1, "mallory", "APPROVED")
	e.forge.review(1, "bob", "CHANGES_REQUESTED")
	c := e.clone()
	st, _, err := state.Replay(ledger.Open(c.dir, 0), time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	r := e.runner("2026-11-22T09:05:00Z")
	rv, err := r.PendingReviews(context.Background(), "s", st)
	if err != nil || strings.Join(rv.Approvers, ",") != "alice" || len(rv.Skipped) != 2 {
		t.Fatalf("PendingReviews = %+v, %v", rv, err)
	}
	e.forge.reviewsErr = &forge.APIError{Op: "GET /repos/o/r/pulls/1/reviews", Status: 502, Message: "Bad Gateway"}
	if _, err := r.PendingReviews(context.Background(), "s", st); err == nil || !strings.Contains(err.Error(), "reading the reviews of pull request #1") {
		t.Fatalf("PendingReviews in an outage = %v", err)
	}
	if rv, err := r.PendingReviews(context.Background(), "w", st); err != nil || len(rv.Approvers) != 0 {
		t.Fatalf("PendingReviews of a schedule with no request = %+v, %v", rv, err)
	}
}

func detailOfEvent(ev *ledger.Event) state.ApprovalDetail {
	var d state.ApprovalDetail
	if ev != nil {
		_ = json.Unmarshal(ev.Detail, &d)
	}
	return d
}
