package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Forge is the part of GitHub that approvals use (internal/forge).
type Forge interface {
	EnsureApprovalPR(ctx context.Context, req forge.ApprovalRequest) (forge.PR, bool, error)
	PullRequest(ctx context.Context, number int) (forge.PR, error)
	ClosePullRequest(ctx context.Context, number int, comment string) error
	FileAt(ctx context.Context, ref, path string) ([]byte, error)
	// IsApprover answers team membership for roles that name @org/team.
	IsApprover(ctx context.Context, login string, allowed []string) (bool, error)
}

// The trust model (README, "Approvals"): the ledger, not the token file,
// is the root of trust. approval.requested records the pull request astra
// opened, its branch and the hash of the exact token bytes astra wrote. A
// request is approved only when that pull request was merged by someone a
// policy authorises to approve, the token bytes of the merge commit hash
// to the recorded value (and carry a valid signature when
// ASTRA_APPROVAL_SECRET is set), and the schedule's definition is still
// the one requested. Anything else is recorded, never run. No state of one
// approval can stop a run: GitHub errors are recorded against the
// approval and checked again next run.

// checkApprovals settles what humans decided since the last run, then
// looks at token files in the checkout that prove nothing.
func (s *session) checkApprovals(ctx context.Context) error {
	// With the pending directory unreadable, each schedule's look says why.
	pending, listErr := approval.Pending(s.r.opts.Root)
	for _, sc := range s.r.cfg.Schedules {
		if req := s.state().Approvals[sc.ID]; req != nil {
			if err := s.advanceApproval(ctx, sc, req); err != nil {
				return err
			}
		}
		if listErr == nil && !pending[strings.ToLower(sc.ID)] {
			continue
		}
		if err := s.checkTokenFile(sc); err != nil {
			return err
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
	case req.Status != ledger.StatusPending || f == nil:
		return nil // approved and waiting to run, or a local approval (`astra approve`)
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

// merged checks a merged approval pull request against the request.
func (s *session) merged(ctx context.Context, sc *model.Schedule, req *state.Approval, pr forge.PR) error {
	d := s.authorize(ctx, model.VerbApprove, identity.PullRequestIdentity(pr.MergedBy), sc)
	if d.Undecided() {
		return s.unchecked(sc, req, fmt.Sprintf("checking who merged pull request #%d", pr.Number), d.Err)
	}
	if !d.Allowed {
		return s.refuseRequest(sc, req, fmt.Sprintf("pull request #%d was merged by %s, who may not approve (%s); nothing runs. "+
			"The request ends here and the next slot opens a new pull request; revert the merge if it was a mistake", pr.Number, pr.MergedBy, d.Reason))
	}
	if req.Token == "" {
		return s.refuseRequest(sc, req, "the request was recorded without a token hash (by an older astra), so no merge can be matched to it; the next slot asks again")
	}
	raw, err := s.r.forge.FileAt(ctx, pr.MergeCommitSHA, approval.Path(sc.ID))
	switch {
	case errors.Is(err, forge.ErrNotFound):
		return s.refuseRequest(sc, req, fmt.Sprintf("the merge of pull request #%d does not contain %s", pr.Number, approval.Path(sc.ID)))
	case err != nil:
		return s.unchecked(sc, req, fmt.Sprintf("reading the token merged by pull request #%d", pr.Number), err)
	case approval.Hash(raw) != req.Token:
		return s.refuseRequest(sc, req, fmt.Sprintf("the token merged in pull request #%d is not the one astra wrote for this request: it was changed on the pull request's branch", pr.Number))
	}
	if secret := s.r.opts.Secret; len(secret) > 0 {
		if tok, err := approval.Parse(raw); err != nil || !tok.SignedWith(secret) {
			return s.refuseRequest(sc, req, fmt.Sprintf("the token merged in pull request #%d is not signed with ASTRA_APPROVAL_SECRET", pr.Number))
		}
	}
	if req.Definition != definitionHash(sc) {
		return s.refuseRequest(sc, req, "the schedule's definition changed after the request: what was approved is not what would run; the next slot asks again")
	}
	ev := s.approvalEvent(ledger.ApprovalApproved, ledger.StatusApproved, sc, req)
	ev.By, ev.PR, ev.ExpiresAt = pr.MergedBy, pr.Number, req.ExpiresAt
	ev.Detail = detail(state.ApprovalDetail{Token: req.Token, Definition: req.Definition})
	s.note(sc, ev, fmt.Sprintf("approved by %s (pull request #%d, %s)", pr.MergedBy, pr.Number, d.Reason))
	return s.record(ev)
}

// closed settles a request whose pull request was closed without merging.
func (s *session) closed(ctx context.Context, sc *model.Schedule, req *state.Approval, pr forge.PR) error {
	d := s.authorize(ctx, model.VerbReject, identity.PullRequestIdentity(pr.ClosedBy), sc)
	if d.Undecided() {
		return s.unchecked(sc, req, fmt.Sprintf("checking who closed pull request #%d", pr.Number), d.Err)
	}
	if !d.Allowed {
		return s.refuseRequest(sc, req, fmt.Sprintf("pull request #%d was closed by %s, who may not reject (%s); a closed pull request can no longer be merged, "+
			"so the request ends and the next slot asks again", pr.Number, orUnknown(pr.ClosedBy), d.Reason))
	}
	reason := pr.CloseComment
	if reason == "" {
		reason = "pull request closed without merging"
	}
	ev := s.approvalEvent(ledger.ApprovalRejected, ledger.StatusRejected, sc, req)
	ev.By, ev.PR, ev.Error = pr.ClosedBy, pr.Number, s.r.opts.Redact.String(reason)
	s.note(sc, ev, fmt.Sprintf("rejected by %s: %s", pr.ClosedBy, ev.Error))
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

// refuseRequest ends a request with a refusal that says why.
func (s *session) refuseRequest(sc *model.Schedule, req *state.Approval, why string) error {
	ev := s.approvalEvent(ledger.ApprovalRefused, ledger.StatusRefused, sc, req)
	ev.PR, ev.ExpiresAt, ev.Error = req.PR, req.ExpiresAt, s.r.opts.Redact.String(why)
	ev.Detail = detail(state.ApprovalDetail{Token: req.Token, Settles: true})
	s.note(sc, ev, ev.Error)
	if err := s.record(ev); err != nil {
		return err
	}
	s.dropToken(sc.ID)
	return nil
}

// unchecked records that GitHub could not answer about one approval: the
// run goes on, the approval is checked again next run, and the run ends
// with an infrastructure error (exit 3) once everything else is done.
func (s *session) unchecked(sc *model.Schedule, req *state.Approval, what string, err error) error {
	msg := s.r.opts.Redact.String(fmt.Sprintf("%s: %v", what, err))
	ev := s.approvalEvent(ledger.ApprovalUnchecked, ledger.StatusFailed, sc, req)
	ev.PR, ev.Error = req.PR, msg+"; checked again next run"
	s.note(sc, ev, ev.Error)
	s.infra(sc, what, err)
	return s.record(ev)
}

// infra notes a GitHub failure about sc that the run outlives.
func (s *session) infra(sc *model.Schedule, what string, err error) {
	s.report.InfraErrors = append(s.report.InfraErrors, s.r.opts.Redact.String(fmt.Sprintf("%s: %s: %v", sc.Name, what, err)))
}

// checkTokenFile looks at sc's token file in the checkout. The bytes of
// an approved request wait there to be consumed; anything else approves
// nothing and is recorded once: a copy of a pending request's token that
// reached the branch before its pull request was merged (ignored, the
// merge still counts), a used token put back, or bytes astra never wrote.
func (s *session) checkTokenFile(sc *model.Schedule) error {
	raw, err := approval.Read(s.r.opts.Root, sc.ID)
	if errors.Is(err, approval.ErrNoToken) {
		return nil
	}
	if err != nil {
		s.report.Errors = append(s.report.Errors, fmt.Sprintf("%s: reading %s: %v", sc.Name, approval.Path(sc.ID), err))
		return nil
	}
	h := approval.Hash(raw)
	st := s.state()
	req := st.Approvals[sc.ID]
	if req != nil && req.Token == h {
		if req.Status == ledger.StatusApproved {
			return nil
		}
		why := "the token reached the branch before its request was approved: it approves nothing by itself"
		if req.PR != 0 {
			why = fmt.Sprintf("the token reached the branch before pull request #%d was merged: it approves nothing until an approver merges #%d", req.PR, req.PR)
		}
		return s.noteToken(sc, req, ledger.ApprovalIgnored, ledger.StatusIgnored, h, why, false)
	}
	why := "this token is not one astra wrote for an open request of this schedule (forged, edited or left over): it approves nothing"
	if _, used := st.Consumed[h]; used {
		why = "this token was already used: one approval is one run"
	}
	return s.noteToken(sc, nil, ledger.ApprovalRefused, ledger.StatusRefused, h, why, true)
}

// noteToken records a token note once per token and kind; drop removes
// the file (committed with the run, except on a state branch).
func (s *session) noteToken(sc *model.Schedule, req *state.Approval, kind ledger.Kind, status, token, why string, drop bool) error {
	if drop {
		s.dropToken(sc.ID)
	}
	if _, done := s.state().Reported[state.ReportedKey(kind, token)]; done {
		return nil
	}
	ev := s.approvalEvent(kind, status, sc, req)
	ev.Error, ev.Detail = why, detail(state.ApprovalDetail{Token: token})
	if req != nil {
		ev.PR, ev.ExpiresAt = req.PR, req.ExpiresAt
	}
	s.note(sc, ev, why)
	return s.record(ev)
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

// dropToken deletes a used or refused token file (recorded in the
// commit). On a state branch the file lives on the default branch and
// stays; the ledger keeps it from approving anything.
func (s *session) dropToken(id string) {
	if s.r.opts.DryRun || s.r.opts.StateBranch {
		return
	}
	if _, err := approval.Read(s.r.opts.Root, id); err != nil {
		return
	}
	if err := approval.Remove(s.r.opts.Root, id); err == nil {
		s.touched = append(s.touched, approval.Path(id))
	}
}

// grantFor is the approval t may run under, or nil: the schedule's
// approved request for t's slot, or an approval of its next due run.
func (s *session) grantFor(t *task) *state.Approval {
	a := s.state().Approvals[t.sched.ID]
	if a == nil || a.Status != ledger.StatusApproved || (a.Key != "" && a.Key != t.key) {
		return nil
	}
	return a
}

// requestApproval records an approval request for a task the gates hold
// back and, with GitHub, opens (or updates) its pull request. A pull
// request that cannot be opened is recorded against this request (the
// next run tries again) and never stops the run.
func (s *session) requestApproval(ctx context.Context, t *task, d gate.Decision) error {
	sc := t.sched
	rq := &request{sched: sc, tool: t.tool, slot: t.slot, key: t.key, mode: t.mode, traceID: t.traceID, reasons: d.ApprovalReasons,
		expires: requestExpiry(t.slot, s.now, sc.ApprovalTTL.D()), definition: definitionHash(sc)}
	if t.eventData != "" {
		rq.event = json.RawMessage(s.r.opts.Redact.String(t.eventData))
	}
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
			"`env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` with `pull-requests: write`, or approve it with `astra approve`"
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
		definition: req.Definition, event: req.Event, reasons: s.r.cfg.Policies.ApprovalReasons(sc, tool)}
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
// holds in ev: its number, branch and the hash of the exact token bytes.
func (s *session) openPR(ctx context.Context, rq *request, ev *ledger.Event) {
	sc := rq.sched
	tok := rq.token()
	tokenFor := func(pr int) []byte {
		c := *tok
		c.PR = pr
		c.Sign(s.r.opts.Secret)
		return c.Encode()
	}
	pr, _, err := s.r.forge.EnsureApprovalPR(ctx, forge.ApprovalRequest{
		ScheduleID: sc.ID, Title: fmt.Sprintf("astra: approve %s (%s)", sc.Name, rq.slot.UTC().Format("2006-01-02 15:04 UTC")),
		Body: approvalBody(s.r, rq), Labels: rq.labels(), Path: approval.Path(sc.ID), Token: tokenFor,
	})
	if err != nil {
		rq.failed = "the approval pull request could not be opened: " + s.r.opts.Redact.String(err.Error()) + "; the next run tries again"
		ev.Error += "; " + rq.failed
		s.infra(sc, "opening the approval pull request", err)
		return
	}
	ev.PR, rq.url = pr.Number, pr.URL
	d := state.ApprovalDetail{Token: approval.Hash(tokenFor(pr.Number)), Branch: forge.ApprovalBranch(sc.ID), Definition: rq.definition, Event: rq.event}
	ev.Detail = detail(d)
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
	sched      *model.Schedule
	tool       *model.Tool
	slot       time.Time
	key        string
	mode       string
	traceID    string
	expires    time.Time
	definition string
	event      json.RawMessage // the triggering event, redacted: what the tool will get
	reasons    []string
	draft      *executor.Result
	url        string // of its pull request
	failed     string // why its pull request could not be opened
}

// payloadHash binds the schedule's payload and the event.
func (rq *request) payloadHash() string { return approval.PayloadHash(rq.sched.Payload, rq.event) }

// token is the token astra writes for rq (without its PR number).
func (rq *request) token() *approval.Token {
	return &approval.Token{ScheduleID: rq.sched.ID, ScheduleName: rq.sched.Name, RequestedAt: rq.slot, ExpiresAt: rq.expires,
		Slot: rq.slot, IdempotencyKey: rq.key, PayloadHash: rq.payloadHash(), Definition: rq.definition}
}

// requested is rq's approval.requested event.
func (rq *request) requested() *ledger.Event {
	sc := rq.sched
	return &ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: sc.ID, Slot: rq.slot, IdempotencyKey: rq.key,
		Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusPending,
		Reason: ledger.ReasonApprovalPending, TraceID: rq.traceID, Mode: rq.mode, ExpiresAt: rq.expires,
		PayloadHash: rq.payloadHash(), Error: strings.Join(rq.reasons, "; "),
		Detail: detail(state.ApprovalDetail{Definition: rq.definition, Event: rq.event})}
}

func (rq *request) labels() []string {
	labels := []string{"astra:approval", fmt.Sprintf("tier-%d", rq.sched.SafetyTier)}
	if rq.draft != nil {
		labels = append(labels, "astra:draft")
	}
	return labels
}
