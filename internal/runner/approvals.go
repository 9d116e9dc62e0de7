package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Forge is the part of GitHub that approvals use (internal/forge).
type Forge interface {
	EnsureApprovalPR(ctx context.Context, req forge.ApprovalRequest) (forge.PR, bool, error)
	PullRequest(ctx context.Context, number int) (forge.PR, error)
	// PullRequestFiles lists the files a pull request changes.
	PullRequestFiles(ctx context.Context, number int) ([]forge.PRFile, error)
	ClosePullRequest(ctx context.Context, number int, comment string) error
	FileAt(ctx context.Context, ref, path string) ([]byte, error)
	// IsApprover answers team membership for roles that name @org/team.
	IsApprover(ctx context.Context, login string, allowed []string) (bool, error)
	// RequestReviewers asks logins and @org/teams for their review.
	RequestReviewers(ctx context.Context, number int, members []string) error
	// PullRequestReviews lists a pull request's reviews, oldest first.
	PullRequestReviews(ctx context.Context, number int) ([]forge.Review, error)
}

// The trust model (docs/security.md, "Approvals verified at use, binding
// the action"): the ledger, not the token file, is the root of trust, and
// only what a run can verify itself approves anything.
//
// A request binds an action (approval.Action): the tool entry, the files
// it runs, the payload and event, the actor, the schedule and astra's
// version. approval.requested records it, with the pull request astra
// opened, its branch, the commit astra wrote as its head and the hash of
// the exact token bytes. Two things approve a request:
//
//   - its pull request, merged by someone a policy authorises to approve,
//     whose head is the commit astra wrote, which changes the token file
//     and nothing else, and whose merge holds the token bytes astra wrote
//     (HMAC-signed when ASTRA_APPROVAL_SECRET is set);
//   - a token signed by an approver (`astra approve`): the signature
//     verifies with a key policies list for approved_by under
//     signing_keys, approved_by may approve the schedule, the token binds
//     the open request (or, with none, an undecided slot of the schedule)
//     and its action.
//
// Either is checked when it is settled (approval.approved) and again when
// a run is about to use it: the action recomputed then must be the one
// approved, and the approver must still be one. Anything else is recorded
// as approval.refused, never run. No state of one approval can stop a
// run: an outage (GitHub, a team lookup) is recorded against the approval
// (approval.check_failed), which is checked again next run, and the run
// ends with exit 3 once everything else ran.

// checkApprovals settles what humans decided since the last run, then
// looks at the approval tokens the run can see.
func (s *session) checkApprovals(ctx context.Context) error {
	tokens := s.pendingTokens()
	for _, sc := range s.r.cfg.Schedules {
		if req := s.state().Approvals[sc.ID]; req != nil {
			if err := s.advanceApproval(ctx, sc, req); err != nil {
				return err
			}
		}
		for _, raw := range s.tokensOf(tokens, sc) {
			if err := s.checkToken(ctx, sc, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// advanceApproval moves one open request on: expired, approved, rejected,
// refused or still waiting.
func (s *session) advanceApproval(ctx context.Context, sc *model.Schedule, req *state.Approval) error {
	if !s.now.Before(req.ExpiresAt) {
		return s.expire(ctx, sc, req)
	}
	f := s.r.forge
	switch {
	case req.Status != ledger.StatusPending:
		return nil // approved: checked again when a run uses it
	case f == nil:
		return nil // waiting for a signed token (`astra approve`)
	case req.PR == 0:
		if s.r.opts.DryRun {
			return nil
		}
		return s.reopen(ctx, sc, req) // opening its pull request failed before
	}
	pr, err := f.PullRequest(ctx, req.PR)
	switch {
	case err != nil:
		return s.unchecked(sc, req, fmt.Sprintf("reading pull request #%d", req.PR), err)
	case pr.Merged:
		return s.merged(ctx, sc, req, pr)
	case pr.State == "closed":
		return s.closed(ctx, sc, req, pr)
	}
	return nil // open: waiting for a human
}

// merged checks a merged approval pull request against the request and
// records the approval, or why it approves nothing.
func (s *session) merged(ctx context.Context, sc *model.Schedule, req *state.Approval, pr forge.PR) error {
	c := s.checkMerge(ctx, sc, req, pr)
	if c.outage != nil {
		return s.unchecked(sc, req, c.what, c.outage)
	}
	if c.refused != "" {
		return s.refuseRequest(sc, req, c.refused, pr.MergedBy, c.why)
	}
	required, reviewers := 0, []string(nil)
	if need := s.r.cfg.Policies.ApprovalsRequired(sc); need > 1 {
		// The merger is one approver; those who signed before it and the
		// role's approving reviews of the head astra wrote are the others.
		approvers := foldIn(req.Approvers(), pr.MergedBy)
		var t reviewTally
		if len(approvers) < need {
			var rc check
			t, rc = s.r.reviewApprovers(ctx, sc, pr.Number, pr.HeadSHA, func(login string) bool { return hasLogin(approvers, login) })
			if rc.outage != nil {
				return s.unchecked(sc, req, rc.what, rc.outage)
			}
			reviewers, approvers = t.approvers, foldIn(approvers, t.approvers...)
		}
		if len(approvers) < need {
			return s.refuseRequest(sc, req, reasonTooFew, pr.MergedBy, fmt.Sprintf("%s needs %d distinct approvers and the merge of #%d has %d (%s)%s: it approves nothing, and the next slot asks again. "+
				"Approvers of the role approve the pull request with a review (or sign with `astra approve`) before one of them merges it", sc.Name, need, pr.Number, len(approvers), strings.Join(approvers, ", "), t.skippedNote()))
		}
		required = need
	}
	ev := s.approvalEvent(ledger.ApprovalApproved, ledger.StatusApproved, sc, req)
	ev.By, ev.PR, ev.ExpiresAt = pr.MergedBy, pr.Number, req.ExpiresAt
	ev.Detail = detail(state.ApprovalDetail{Token: req.Token, Head: req.Head, Action: req.Action, Event: req.Event, Via: state.ViaPullRequest, Rollback: req.Rollback,
		Required: required, Reviewers: reviewers})
	msg := fmt.Sprintf("approved by %s (pull request #%d, %s)", pr.MergedBy, pr.Number, c.allowed)
	if len(reviewers) > 0 {
		msg += ", with approving reviews by " + strings.Join(reviewers, ", ")
	}
	s.note(sc, ev, msg)
	return s.record(ev)
}

// closed settles a request whose pull request was closed without merging.
func (s *session) closed(ctx context.Context, sc *model.Schedule, req *state.Approval, pr forge.PR) error {
	d := s.authorize(ctx, model.VerbReject, identity.PullRequestIdentity(pr.ClosedBy), sc)
	if d.Undecided() {
		return s.unchecked(sc, req, fmt.Sprintf("checking who closed pull request #%d", pr.Number), d.Err)
	}
	if !d.Allowed {
		return s.refuseRequest(sc, req, reasonNotApprover, pr.ClosedBy, fmt.Sprintf("pull request #%d was closed by %s, who may not reject (%s); a closed pull request can no longer be merged, "+
			"so the request ends and the next slot asks again", pr.Number, orUnknown(pr.ClosedBy), d.Reason))
	}
	ev := s.approvalEvent(ledger.ApprovalRejected, ledger.StatusRejected, sc, req)
	ev.By, ev.PR, ev.Comment = pr.ClosedBy, pr.Number, s.r.opts.Redact.String(pr.CloseComment)
	s.note(sc, ev, fmt.Sprintf("rejected by %s: %s", pr.ClosedBy, cmp.Or(ev.Comment, "pull request closed without merging")))
	return s.record(ev)
}

// expire ends a request past its expiry. Its pull request is closed when
// still open; one merged too late is only recorded.
func (s *session) expire(ctx context.Context, sc *model.Schedule, req *state.Approval) error {
	ev := s.approvalEvent(ledger.ApprovalExpired, ledger.StatusExpired, sc, req)
	ev.PR, ev.ExpiresAt = req.PR, req.ExpiresAt
	ev.Error = fmt.Sprintf("not approved before %s; the next due slot asks again", req.ExpiresAt.UTC().Format(time.RFC3339))
	if req.Status == ledger.StatusApproved {
		ev.Error = fmt.Sprintf("approved by %s but not run before it expired at %s (a gate held it back)", req.By, req.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if f := s.r.forge; f != nil && req.PR != 0 && !s.r.opts.DryRun && req.Status == ledger.StatusPending {
		pr, err := f.PullRequest(ctx, req.PR)
		switch {
		case err != nil:
			s.infra(sc, fmt.Sprintf("reading expired approval pull request #%d", req.PR), err)
		case pr.Merged:
			ev.Error = fmt.Sprintf("pull request #%d was merged by %s at %s, after the request expired at %s; nothing runs, and the next due slot asks again",
				pr.Number, pr.MergedBy, pr.MergedAt.UTC().Format(time.RFC3339), req.ExpiresAt.UTC().Format(time.RFC3339))
		case pr.State == "open":
			msg := fmt.Sprintf("astra: this approval request expired at %s without being merged. The next due run will ask again.", req.ExpiresAt.UTC().Format(time.RFC3339))
			if err := f.ClosePullRequest(ctx, pr.Number, msg); err != nil && !errors.Is(err, forge.ErrMerged) {
				s.infra(sc, fmt.Sprintf("closing expired approval pull request #%d", pr.Number), err)
			}
		}
	}
	s.note(sc, ev, ev.Error)
	if err := s.record(ev); err != nil {
		return err
	}
	s.dropToken(sc.ID)
	return nil
}

// Reasons of approval.refused: why an approval approves nothing, in a word.
const (
	reasonNotApprover   = "not_approver"   // who merged, closed or signed may not
	reasonNoToken       = "no_token"       // the merge lacks the token, or the request its hash
	reasonTokenChanged  = "token_changed"  // the token merged is not the one astra wrote
	reasonUnsigned      = "unsigned"       // no signature an approver made
	reasonForeignCommit = "foreign_commit" // the pull request holds commits astra did not write
	reasonActionChanged = "action_changed" // what would run is not what was approved
	reasonNotBound      = "not_bound"      // the token binds no open request or undecided slot
	reasonUsed          = "used"           // the token was already used
	reasonExpired       = "expired"
	reasonUnverifiable  = "unverifiable"      // the approval cannot be checked again (recorded by an older astra)
	reasonRepeated      = "repeat_approver"   // approval.ignored: this approver already counted towards the approval
	reasonTooFew        = "too_few_approvers" // fewer distinct approvers than approvals_required
)

// refuseRequest ends a request with a refusal that says who, what and why.
func (s *session) refuseRequest(sc *model.Schedule, req *state.Approval, reason, by, why string) error {
	ev := s.approvalEvent(ledger.ApprovalRefused, ledger.StatusRefused, sc, req)
	ev.PR, ev.ExpiresAt, ev.Reason, ev.By, ev.Error = req.PR, req.ExpiresAt, reason, by, s.r.opts.Redact.String(why)
	ev.Detail = detail(state.ApprovalDetail{Token: req.Token, Settles: true})
	s.note(sc, ev, ev.Error)
	if err := s.record(ev); err != nil {
		return err
	}
	s.dropToken(sc.ID)
	return nil
}

// unchecked records that an approval could not be checked (GitHub or a
// team lookup did not answer): the run goes on without it, the approval
// is checked again next run, and the run ends with an infrastructure
// error (exit 3) once everything else is done. req may be nil (a signed
// token nothing requested).
func (s *session) unchecked(sc *model.Schedule, req *state.Approval, what string, err error) error {
	msg := s.r.opts.Redact.String(fmt.Sprintf("%s: %v", what, err))
	ev := s.approvalEvent(ledger.ApprovalUnchecked, ledger.StatusFailed, sc, req)
	ev.Error = msg + "; checked again next run"
	if req != nil {
		ev.PR = req.PR
	}
	s.note(sc, ev, ev.Error)
	s.infra(sc, what, err)
	return s.record(ev)
}

// infra notes a GitHub failure about sc that the run outlives.
func (s *session) infra(sc *model.Schedule, what string, err error) {
	s.report.InfraErrors = append(s.report.InfraErrors, s.r.opts.Redact.String(fmt.Sprintf("%s: %s: %v", sc.Name, what, err)))
}

// approvalEvent starts an approval event about sc (and req, when set).
func (s *session) approvalEvent(kind ledger.Kind, status string, sc *model.Schedule, req *state.Approval) *ledger.Event {
	ev := &ledger.Event{Event: kind, ScheduleID: sc.ID, Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool,
		Tier: int(sc.SafetyTier), Status: status, Mode: ledger.ModeScheduled}
	if req != nil {
		ev.Slot, ev.IdempotencyKey, ev.TraceID, ev.PayloadHash = req.Slot, req.Key, req.TraceID, req.PayloadHash
		if req.Mode != "" {
			ev.Mode = req.Mode
		}
	}
	return ev
}

// note tells the run's report what became of an approval.
func (s *session) note(sc *model.Schedule, ev *ledger.Event, text string) {
	s.report.Approvals = append(s.report.Approvals, &ApprovalNote{ScheduleID: sc.ID, Name: sc.Name, Event: string(ev.Event), PR: ev.PR, Detail: text})
}

func detail(d state.ApprovalDetail) json.RawMessage {
	b, _ := json.Marshal(d)
	return b
}

func orUnknown(login string) string {
	if login == "" {
		return "someone"
	}
	return login
}

// authorize asks the policies whether id may do verb on sc, with GitHub
// answering for teams when it is configured.
func (s *session) authorize(ctx context.Context, verb string, id identity.Identity, sc *model.Schedule) identity.Decision {
	return s.r.authorize(ctx, verb, id, sc)
}

func (r *Runner) authorize(ctx context.Context, verb string, id identity.Identity, sc *model.Schedule) identity.Decision {
	var teams identity.Teams
	if r.forge != nil {
		teams = identity.ForgeTeams(r.forge)
	}
	role := ""
	if sc != nil {
		role = approverRole(r.cfg, sc)
	}
	return identity.Authorize(ctx, &r.cfg.Policies, verb, id, teams, role)
}

// approverRole is the approver role of sc's task policy, "" when none.
func approverRole(cfg *model.Config, sc *model.Schedule) string {
	if tp := cfg.Policies.TaskPolicy(sc.TargetTool, sc.Tenant); tp != nil {
		return tp.ApproverRole
	}
	return ""
}

// dropToken deletes a used or refused token file from the checkout
// (recorded in the commit). On a state branch the checkout's file lives
// on the default branch and stays; the ledger keeps it from approving
// anything.
func (s *session) dropToken(id string) {
	if s.r.opts.DryRun || s.r.opts.StateBranch {
		return
	}
	raw, err := approval.Read(s.r.opts.Root, id)
	if err != nil {
		return
	}
	if err := approval.Remove(s.r.opts.Root, id); err == nil {
		s.touched = append(s.touched, approval.Path(id))
		if s.dropped == nil {
			s.dropped = map[string]string{}
		}
		s.dropped[id] = approval.Hash(raw)
	}
}

// redrop deletes again the token files this run deleted, after a resync
// brought the remote's copy back (a token `astra approve` pushed to the
// branch while this run used it from the remote-tracking branch). Only
// the same bytes: a token pushed meanwhile waits for the next run.
func (s *session) redrop() {
	for id, h := range s.dropped {
		if raw, err := approval.Read(s.r.opts.Root, id); err == nil && approval.Hash(raw) == h {
			_ = approval.Remove(s.r.opts.Root, id)
		}
	}
}
