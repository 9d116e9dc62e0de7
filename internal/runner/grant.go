package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// action is what a run of sc would be now (approval.Action): the tool
// entry, the files it runs, the payload and event, the actor, the
// schedule and astra's version; rollback is the tool's compensating
// command instead of the run.
func (r *Runner) action(sc *model.Schedule, event json.RawMessage, rollback bool) (approval.Action, error) {
	return approval.Compute(approval.Subject{Root: r.opts.Root, Schedule: sc, Tool: r.cfg.Policies.Tools[sc.TargetTool],
		Actor: r.cfg.Policies.Actor(sc.Actor), Event: event, Definition: definitionHash(sc), Rollback: rollback})
}

// taskEvent is t's event as an approval binds it: redacted, as the pull
// request shows it and as the approved run gets it.
func (s *session) taskEvent(t *task) json.RawMessage {
	if t.eventData == "" {
		return nil
	}
	return json.RawMessage(s.r.opts.Redact.String(t.eventData))
}

// grantFor is the approval t may run under, or nil: the schedule's
// approved request for t's key (for a rollback, the approved rollback).
func (s *session) grantFor(t *task) *state.Approval {
	a := s.state().Approvals[t.sched.ID]
	if a == nil || a.Status != ledger.StatusApproved || a.Key != t.key || a.Rollback != t.rollback {
		return nil
	}
	return a
}

// check is what checking an approval found: nothing wrong, a refusal
// (reason word and why), or an outage that kept it from deciding.
type check struct {
	refused, why string
	what         string // what could not be checked
	outage       error
	allowed      string // who allowed it, in words
}

func refusedCheck(reason, why string) check { return check{refused: reason, why: why} }

// useGrant checks, as a run is about to use it, the approval a grants t:
// the action recomputed now is the one approved, and the approval still
// stands (its pull request through GitHub, or its signer's key and role
// under the policies now). ok false means t does not run: the approval
// was refused (recorded; the request ends), or it could not be checked
// (recorded as check_failed; it stays, and the next run checks again).
func (s *session) useGrant(ctx context.Context, t *task, a *state.Approval) (bool, error) {
	sc := t.sched
	if c := s.checkAction(sc, a, s.taskEvent(t)); c.refused != "" {
		return false, s.refuseRequest(sc, a, c.refused, a.By, c.why)
	}
	if need, have := s.r.cfg.Policies.ApprovalsRequired(sc), max(len(a.Approvers()), 1); have < need {
		return false, s.refuseRequest(sc, a, reasonTooFew, a.By, fmt.Sprintf("%s needs %d distinct approvers and its approval has %d: it approves nothing; the next slot asks again", sc.Name, need, have))
	}
	var c check
	switch a.Via {
	case state.ViaPullRequest:
		c = s.recheckMerge(ctx, sc, a)
	case state.ViaSignature:
		c = s.checkSigner(ctx, sc, a)
	default:
		c = refusedCheck(reasonUnverifiable, "the approval was recorded without saying how it was given (by an older astra), so it cannot be checked again: "+
			"it approves nothing; the next slot asks again")
	}
	if c.refused == "" && c.outage == nil {
		c = s.checkCoApprovers(ctx, sc, a)
	}
	switch {
	case c.outage != nil:
		t.outcome.Action, t.outcome.Reason = ActionDeferred, "approval_unchecked"
		t.outcome.Detail = fmt.Sprintf("the approval by %s could not be checked (%s); it is checked again next run", a.By, s.r.opts.Redact.String(c.outage.Error()))
		return false, s.unchecked(sc, a, c.what, c.outage)
	case c.refused != "":
		return false, s.refuseRequest(sc, a, c.refused, a.By, c.why)
	}
	return true, nil
}

// checkAction compares the action a approves with the action now.
func (s *session) checkAction(sc *model.Schedule, a *state.Approval, event json.RawMessage) check {
	now, err := s.r.action(sc, event, a.Rollback)
	if err != nil {
		return refusedCheck(reasonActionChanged, "what would run cannot be bound to the approval: "+err.Error()+"; nothing runs")
	}
	if ch := approval.Changes(approval.DecodeAction(a.Action), now); ch != nil {
		who := "was approved"
		if a.By != "" {
			who = a.By + " approved"
		}
		return refusedCheck(reasonActionChanged, fmt.Sprintf("what would run is not what %s: %s; nothing runs, and the next slot asks again", who, strings.Join(ch, "; ")))
	}
	return check{}
}

// recheckMerge reads an approval's pull request again and checks it.
func (s *session) recheckMerge(ctx context.Context, sc *model.Schedule, a *state.Approval) check {
	f := s.r.forge
	what := fmt.Sprintf("checking pull request #%d again before the run", a.PR)
	if f == nil {
		return check{what: what, outage: errors.New("GitHub is not configured here (GITHUB_TOKEN and GITHUB_REPOSITORY)")}
	}
	pr, err := f.PullRequest(ctx, a.PR)
	if err != nil {
		return check{what: what, outage: err}
	}
	if !pr.Merged {
		return refusedCheck(reasonNoToken, fmt.Sprintf("pull request #%d is not merged", a.PR))
	}
	if c := s.checkMerge(ctx, sc, a, pr); c.refused != "" || c.outage != nil || len(a.Reviewers()) == 0 {
		return c
	}
	// The reviewers the approval names must still approve through GitHub.
	t, c := s.r.reviewApprovers(ctx, sc, pr.Number, pr.HeadSHA, func(login string) bool { return strings.EqualFold(login, pr.MergedBy) })
	if c.outage != nil {
		return c
	}
	for _, who := range a.Reviewers() {
		if !hasLogin(t.approvers, who) {
			return refusedCheck(reasonNotApprover, fmt.Sprintf("the approving review of pull request #%d by %s no longer counts%s; nothing runs, and the next slot asks again", pr.Number, who, t.skippedNote()))
		}
	}
	return check{}
}

// checkCoApprovers checks, when an approval needs several approvers, that
// those who signed it before its last approver may still approve (the last
// one and the reviewers are checked with how they approved).
func (s *session) checkCoApprovers(ctx context.Context, sc *model.Schedule, a *state.Approval) check {
	for _, who := range a.Approvers() {
		if strings.EqualFold(who, a.By) || (a.Via == state.ViaPullRequest && hasLogin(a.Reviewers(), who)) {
			continue // checked with how they approved (checkSigner, recheckMerge)
		}
		if why := s.checkCoProof(sc.ID, a, who); why != "" {
			return refusedCheck(reasonUnsigned, fmt.Sprintf("the approval of %s by %s, one of its approvers: %s; nothing runs, and the next slot asks again", a.Key, who, why))
		}
		d := s.authorize(ctx, model.VerbApprove, identity.SignatureIdentity(who), sc)
		switch {
		case d.Undecided():
			return check{what: fmt.Sprintf("checking whether %s may still approve", who), outage: d.Err}
		case !d.Allowed:
			return refusedCheck(reasonNotApprover, fmt.Sprintf("%s, one of the approvers of %s, may no longer approve (%s); nothing runs, and the next slot asks again", who, a.Key, d.Reason))
		}
	}
	return check{}
}

// checkMerge checks a merged approval pull request against its request:
// its merger may approve now, its head is the commit astra wrote, it
// changes the token file only, its merge holds exactly the token bytes
// astra wrote (signed, with ASTRA_APPROVAL_SECRET), and the action is
// still the one requested.
func (s *session) checkMerge(ctx context.Context, sc *model.Schedule, req *state.Approval, pr forge.PR) check {
	d := s.authorize(ctx, model.VerbApprove, identity.PullRequestIdentity(pr.MergedBy), sc)
	switch {
	case d.Undecided():
		return check{what: fmt.Sprintf("checking who merged pull request #%d", pr.Number), outage: d.Err}
	case !d.Allowed:
		return refusedCheck(reasonNotApprover, fmt.Sprintf("pull request #%d was merged by %s, who may not approve (%s); nothing runs. "+
			"The request ends here and the next slot opens a new pull request; revert the merge if it was a mistake", pr.Number, pr.MergedBy, d.Reason))
	case req.Token == "":
		return refusedCheck(reasonNoToken, "the request was recorded without a token hash (by an older astra), so no merge can be matched to it; the next slot asks again")
	case req.Head != "" && pr.HeadSHA != req.Head:
		return refusedCheck(reasonForeignCommit, fmt.Sprintf("pull request #%d was merged with head %.12s, not the commit astra wrote (%.12s): someone pushed onto %s; "+
			"nothing runs, and the next slot asks again", pr.Number, pr.HeadSHA, req.Head, forge.ApprovalBranch(sc.ID)))
	}
	if c := s.checkFiles(ctx, sc, pr); c.refused != "" || c.outage != nil {
		return c
	}
	raw, err := s.r.forge.FileAt(ctx, pr.MergeCommitSHA, approval.Path(sc.ID))
	switch {
	case errors.Is(err, forge.ErrNotFound):
		return refusedCheck(reasonNoToken, fmt.Sprintf("the merge of pull request #%d does not contain %s", pr.Number, approval.Path(sc.ID)))
	case err != nil:
		return check{what: fmt.Sprintf("reading the token merged by pull request #%d", pr.Number), outage: err}
	case approval.Hash(raw) != req.Token:
		return refusedCheck(reasonTokenChanged, fmt.Sprintf("the token merged in pull request #%d is not the one astra wrote for this request: it was changed on the pull request's branch", pr.Number))
	}
	if tok, err := approval.Parse(raw); err != nil || tok.ScheduleID != sc.ID || tok.IdempotencyKey != req.Key || tok.PR != pr.Number {
		// The bytes astra wrote for another request (another slot, or one
		// used before) approve only that one.
		return refusedCheck(reasonNotBound, fmt.Sprintf("the token merged in pull request #%d was written for another request than %s", pr.Number, req.Key))
	}
	if secret := s.r.opts.Secret; len(secret) > 0 {
		if tok, err := approval.Parse(raw); err != nil || !tok.SignedWith(secret) {
			return refusedCheck(reasonUnsigned, fmt.Sprintf("the token merged in pull request #%d is not signed with ASTRA_APPROVAL_SECRET", pr.Number))
		}
	}
	if c := s.checkAction(sc, req, req.Event); c.refused != "" {
		return c
	}
	return check{allowed: d.Reason}
}

// checkFiles checks, through GitHub, that an approval pull request
// changes its token file and nothing else: a commit someone added to the
// approval branch would be merged with the approval.
func (s *session) checkFiles(ctx context.Context, sc *model.Schedule, pr forge.PR) check {
	files, err := s.r.forge.PullRequestFiles(ctx, pr.Number)
	switch {
	case errkind.Of(err) == errkind.ErrRefused:
		return refusedCheck(reasonForeignCommit, err.Error())
	case err != nil:
		return check{what: fmt.Sprintf("listing the files pull request #%d changes", pr.Number), outage: err}
	}
	token := approval.Path(sc.ID)
	var other []string
	for _, f := range files {
		if f.Path != token || f.PreviousPath != "" || f.Status == "removed" {
			other = append(other, f.Path)
		}
	}
	if len(other) > 0 || len(files) == 0 {
		return refusedCheck(reasonForeignCommit, fmt.Sprintf("pull request #%d changes %s, not only %s: a change merged with an approval is not one astra asked for; "+
			"nothing runs, and the next slot asks again", pr.Number, orNothing(other), token))
	}
	return check{}
}

func orNothing(paths []string) string {
	if len(paths) == 0 {
		return "nothing"
	}
	if len(paths) > 5 {
		return strings.Join(paths[:5], ", ") + fmt.Sprintf(" and %d more", len(paths)-5)
	}
	return strings.Join(paths, ", ")
}

// checkSigner checks that a signed approval's key is still listed for its
// signer and that the signer may still approve.
func (s *session) checkSigner(ctx context.Context, sc *model.Schedule, a *state.Approval) check {
	if why := s.checkProof(sc.ID, a); why != "" {
		return refusedCheck(reasonUnsigned, why+"; nothing runs, and the next slot asks again")
	}
	if login := approval.KeyOwner(s.r.cfg.Policies.SigningKeys, a.Signer); a.Signer == "" || !strings.EqualFold(login, a.By) {
		return refusedCheck(reasonNotApprover, fmt.Sprintf("the key %s that signed the approval is no longer listed for %s under signing_keys; nothing runs", orNone(a.Signer), a.By))
	}
	d := s.authorize(ctx, model.VerbApprove, identity.SignatureIdentity(a.By), sc)
	switch {
	case d.Undecided():
		return check{what: fmt.Sprintf("checking whether %s may still approve", a.By), outage: d.Err}
	case !d.Allowed:
		return refusedCheck(reasonNotApprover, fmt.Sprintf("%s signed the approval but may no longer approve %s (%s); nothing runs", a.By, sc.Name, d.Reason))
	}
	return check{allowed: d.Reason}
}

// checkProof checks the signature of the token a signed approval carries
// (state.Approval.Proof) again, under the signing keys listed now, and
// that the token is the one the approval names: a line that says "signed"
// without a signature an approver made approves nothing. It returns why
// not, or "".
func (s *session) checkProof(scheduleID string, a *state.Approval) string {
	if len(a.Proof) == 0 {
		return "the approval does not carry the token its approver signed (recorded by an older astra, or written by hand), so its signature cannot be checked"
	}
	tok, err := approval.Parse(a.Proof)
	if err != nil {
		return "the signed token the approval carries cannot be read: " + err.Error()
	}
	key, err := tok.VerifyApprover(s.r.cfg.Policies.SigningKeys)
	switch {
	case err != nil:
		return "the signature of the token the approval carries does not hold: " + err.Error()
	case tok.SignedID() != a.Token, tok.ScheduleID != scheduleID, tok.IdempotencyKey != a.Key, !strings.EqualFold(tok.ApprovedBy, a.By), key.Fingerprint() != a.Signer:
		return fmt.Sprintf("the signed token the approval carries is not the one it names (token of %s for %s, signed by %s)", tok.ScheduleID, orNone(tok.IdempotencyKey), tok.ApprovedBy)
	}
	return ""
}

// checkCoProof checks the signed token of who, one of several approvers of
// a, under the signing keys listed now: it must be who's signature of
// a's run and action. It returns why not, or "".
func (s *session) checkCoProof(scheduleID string, a *state.Approval, who string) string {
	proof := a.Quorum.Proofs[strings.ToLower(who)]
	if len(proof) == 0 {
		return "the approval does not carry the token they signed, so their signature cannot be checked"
	}
	tok, err := approval.Parse(proof)
	if err != nil {
		return "the token they signed cannot be read: " + err.Error()
	}
	if _, err := tok.VerifyApprover(s.r.cfg.Policies.SigningKeys); err != nil {
		return "their signature does not hold under the keys listed now: " + err.Error()
	}
	if want := approval.DecodeAction(a.Action); tok.ScheduleID != scheduleID || tok.IdempotencyKey != a.Key || !strings.EqualFold(tok.ApprovedBy, who) || tok.Action == nil || tok.Action.Hash != want.Hash {
		return fmt.Sprintf("the token they signed is not for this run and action (token of %s for %s, signed by %s)", tok.ScheduleID, orNone(tok.IdempotencyKey), tok.ApprovedBy)
	}
	return ""
}

// retryGranted decides an automatic retry of a run that consumed an
// approval: it may run (true), without a new approval, only while the
// action is still the one approved and its approvers (all of them, when
// it needed several) may still approve.
// Otherwise the slot goes to the dead letter, recorded with what changed:
// a person may release it (`astra dead-letter retry`), and the released
// retry then needs an approval of its own. When the approver's role cannot
// be told now (an outage), the retry waits for the next run.
func (s *session) retryGranted(ctx context.Context, t *task, g *state.Grant) (bool, error) {
	now, err := s.r.action(t.sched, s.taskEvent(t), false)
	var ch []string
	if err != nil {
		ch = []string{err.Error()}
	} else {
		ch = approval.Changes(approval.DecodeAction(g.Action), now)
	}
	if len(ch) > 0 {
		why := fmt.Sprintf("the retry of %s would not run what %s approved: %s", t.key, orUnknown(g.By), strings.Join(ch, "; "))
		return false, s.refuseRetry(t, g.By, reasonActionChanged, why)
	}
	for _, who := range foldIn([]string{g.By}, g.Approvers()...) {
		d := s.authorize(ctx, model.VerbApprove, identity.Identity{Login: who, Verified: true}, t.sched)
		switch {
		case d.Undecided():
			t.outcome.Action, t.outcome.Reason = ActionDeferred, "approval_unchecked"
			t.outcome.Detail = fmt.Sprintf("whether %s, who approved the run, may still approve could not be told (%s); the retry waits for the next run", orUnknown(who), s.r.opts.Redact.String(d.Err.Error()))
			s.infra(t.sched, fmt.Sprintf("checking whether %s, who approved the retried run, may still approve", orUnknown(who)), d.Err)
			return false, nil
		case !d.Allowed:
			why := fmt.Sprintf("%s approved %s but may no longer approve %s (%s)", orUnknown(who), t.key, t.sched.Name, d.Reason)
			return false, s.refuseRetry(t, who, reasonNotApprover, why)
		}
	}
	return true, nil
}

// refuseRetry records why a retry may not run under the approval its
// first attempt consumed (by: the approver the refusal is about), and
// sends its slot to the dead letter.
func (s *session) refuseRetry(t *task, by, reason, why string) error {
	ref := t.event(ledger.ApprovalRefused, ledger.StatusRefused)
	ref.Reason, ref.By, ref.Error = reason, by, s.r.opts.Redact.String(why+"; nothing runs")
	dl := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
	dl.Attempt, dl.Reason = max(t.attempt-1, 1), reason
	dl.Error = s.r.opts.Redact.String(fmt.Sprintf("%s; not retried: release it with `astra dead-letter retry %s`, and it asks for a new approval", why, t.key))
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail, t.outcome.DeadLettered = ActionSkipped, reason, dl.Error, true
	s.note(t.sched, ref, ref.Error)
	return s.record(ref, dl)
}
