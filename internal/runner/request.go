package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// requestApproval records an approval request for a task the gates hold
// back and, with GitHub, opens (or updates) its pull request. A pull
// request that cannot be opened is recorded against this request (the
// next run tries again) and never stops the run. A run whose action
// cannot be bound (a tool file that is a link out of the repository) is
// skipped: what cannot be bound cannot be approved.
func (s *session) requestApproval(ctx context.Context, t *task, d gate.Decision) error {
	sc := t.sched
	act, err := s.r.action(sc, s.taskEvent(t), t.rollback)
	if err != nil {
		return s.skip(t, ledger.ReasonPolicy, "it needs an approval, but "+err.Error())
	}
	rq := &request{sched: sc, tool: s.r.cfg.Policies.Tools[sc.TargetTool], slot: t.slot, key: t.key, mode: t.mode, traceID: t.traceID, reasons: d.ApprovalReasons,
		expires: requestExpiry(t.slot, s.now, sc.ApprovalTTL.D()), action: act, event: s.taskEvent(t), rollback: t.rollback}
	if d.Draft {
		res := s.r.dryRun(ctx, t)
		t.draft = &res
		rq.draft = &res
	}
	ev := rq.requested()
	if d.Draft {
		ev.Output = s.r.tail(t.draft.Output + t.draft.WouldRun)
	}
	switch {
	case s.r.forge != nil && !s.r.opts.DryRun:
		s.openPR(ctx, rq, ev)
	case s.r.forge == nil && s.r.opts.CI && !s.r.opts.DryRun:
		why := "it needs an approval pull request, but GITHUB_TOKEN or GITHUB_REPOSITORY is not set: give the workflow step " +
			"`env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` with `pull-requests: write`, or have an approver sign one with `astra approve`"
		s.report.InfraErrors = append(s.report.InfraErrors, sc.Name+": "+why)
		ev.Error += "; " + why
	}
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionAwaitingApproval, ledger.ReasonApprovalPending, d.Detail
	t.outcome.PR, t.outcome.PRURL = ev.PR, rq.url
	if rq.failed != "" {
		t.outcome.Detail += "; " + rq.failed
	}
	if err := s.record(ev); err != nil || ev.PR == 0 {
		return err
	}
	// A pull request on GitHub now holds this request's token: its record
	// goes to disk now, not with the rest of the decisions.
	return s.j.Flush()
}

// reopen tries again to open the pull request of a request whose first
// attempt failed.
func (s *session) reopen(ctx context.Context, sc *model.Schedule, req *state.Approval) error {
	tool := s.r.cfg.Policies.Tools[sc.TargetTool]
	if tool == nil {
		return nil
	}
	rq := &request{sched: sc, tool: tool, slot: req.Slot, key: req.Key, mode: req.Mode, traceID: req.TraceID, expires: req.ExpiresAt,
		action: approval.DecodeAction(req.Action), event: req.Event, rollback: req.Rollback, reasons: s.r.cfg.Policies.ApprovalReasons(sc, tool)}
	ev := rq.requested()
	s.openPR(ctx, rq, ev)
	if ev.PR == 0 {
		s.note(sc, ev, rq.failed)
		return nil // recorded when it was first made; the failure is in the report
	}
	s.note(sc, ev, fmt.Sprintf("opened pull request #%d", ev.PR))
	return s.record(ev)
}

// openPR opens or updates the pull request of rq and records what it
// holds in ev: its number, branch, the commit astra wrote as its head and
// the hash of the exact token bytes.
func (s *session) openPR(ctx context.Context, rq *request, ev *ledger.Event) {
	sc := rq.sched
	tok := rq.token()
	tokenFor := func(pr int) []byte {
		c := *tok
		c.PR = pr
		c.Sign(s.r.opts.Secret)
		return c.Encode()
	}
	title := fmt.Sprintf("astra: approve %s (%s)", sc.Name, rq.slot.UTC().Format("2006-01-02 15:04 UTC"))
	if rq.rollback {
		title = fmt.Sprintf("astra: approve the rollback of %s (%s)", sc.Name, strings.TrimSuffix(rq.key, rollbackSuffix))
	}
	pr, created, err := s.r.forge.EnsureApprovalPR(ctx, forge.ApprovalRequest{
		ScheduleID: sc.ID, Title: title, Body: approvalBody(s.r, rq), Labels: rq.labels(), Path: approval.Path(sc.ID), Token: tokenFor,
	})
	if err != nil {
		rq.failed = "the approval pull request could not be opened: " + s.r.opts.Redact.String(err.Error()) + "; the next run tries again"
		ev.Error += "; " + rq.failed
		s.infra(sc, "opening the approval pull request", err)
		return
	}
	ev.PR, rq.url = pr.Number, pr.URL
	ev.Detail = detail(state.ApprovalDetail{Token: approval.Hash(tokenFor(pr.Number)), Branch: forge.ApprovalBranch(sc.ID), Head: pr.HeadSHA,
		Action: rq.action.Encode(), Event: rq.event, Rollback: rq.rollback})
	if created {
		s.requestReview(ctx, rq, ev, pr.Number)
	}
}

// requestReview asks the members of the roles that may approve rq for
// their review of its pull request. A failure is a warning recorded with
// the request: the pull request is open, and approvers can find it.
func (s *session) requestReview(ctx context.Context, rq *request, ev *ledger.Event, number int) {
	var members []string
	for _, role := range s.r.cfg.Policies.RolesFor(model.VerbApprove, approverRole(s.r.cfg, rq.sched)) {
		for _, m := range s.r.cfg.Policies.Roles[role] {
			if !slices.Contains(members, m) {
				members = append(members, m)
			}
		}
	}
	if len(members) == 0 {
		return
	}
	if err := s.r.forge.RequestReviewers(ctx, number, members); err != nil {
		msg := "review not requested: " + s.r.opts.Redact.String(err.Error())
		ev.Error += "; " + msg
		s.report.Warnings = append(s.report.Warnings, rq.sched.Name+": "+msg)
	}
}

// requestExpiry is slot + ttl, so every runner writes the same token for
// a slot; a request made after that (a late catch-up) gets ttl from now.
func requestExpiry(slot, now time.Time, ttl time.Duration) time.Time {
	if e := slot.Add(ttl); e.After(now) {
		return e
	}
	return now.Truncate(time.Minute).Add(ttl)
}

// request is one approval request: what the pull request shows and what
// its token binds.
type request struct {
	sched    *model.Schedule
	tool     *model.Tool
	slot     time.Time
	key      string
	mode     string
	traceID  string
	expires  time.Time
	action   approval.Action
	event    json.RawMessage // the triggering event, redacted: what the tool will get
	rollback bool            // the request is for the rollback of the run key names
	reasons  []string
	draft    *executor.Result
	url      string // of its pull request
	failed   string // why its pull request could not be opened
}

// payloadHash binds the schedule's payload and the event.
func (rq *request) payloadHash() string { return approval.PayloadHash(rq.sched.Payload, rq.event) }

// token is the token astra writes for rq (without its PR number).
func (rq *request) token() *approval.Token {
	a := rq.action
	return &approval.Token{ScheduleID: rq.sched.ID, ScheduleName: rq.sched.Name, RequestedAt: rq.slot, ExpiresAt: rq.expires,
		Slot: rq.slot, IdempotencyKey: rq.key, PayloadHash: rq.payloadHash(), Action: &a}
}

// requested is rq's approval.requested event.
func (rq *request) requested() *ledger.Event {
	sc := rq.sched
	return &ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: sc.ID, Slot: rq.slot, IdempotencyKey: rq.key,
		Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusPending,
		Reason: ledger.ReasonApprovalPending, TraceID: rq.traceID, Mode: rq.mode, ExpiresAt: rq.expires,
		PayloadHash: rq.payloadHash(), Error: strings.Join(rq.reasons, "; "),
		Detail: detail(state.ApprovalDetail{Action: rq.action.Encode(), Event: rq.event, Rollback: rq.rollback})}
}

func (rq *request) labels() []string {
	labels := []string{"astra:approval", fmt.Sprintf("tier-%d", rq.sched.SafetyTier)}
	if rq.draft != nil {
		labels = append(labels, "astra:draft")
	}
	if rq.rollback {
		labels = append(labels, "astra:rollback")
	}
	return labels
}
