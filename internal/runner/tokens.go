package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// remoteFiles is gitops.Repo: the files of astra's branch as the remote
// has it, beside the checkout.
type remoteFiles interface {
	RemoteFiles(paths ...string) (map[string][]byte, error)
}

// tokens are the approval tokens a run can see: the checkout's (where a
// pull request's merge lands) and those of astra's branch as the remote
// has it (where `astra approve` pushes a signed token, as astra's own
// commit, while the checkout may be behind or on another branch).
type tokens struct {
	listed  map[string]bool // lower-cased schedule ids with a token file in the checkout
	listErr error
	branch  map[string][]byte // lower-cased schedule id -> the branch's token
}

// pendingTokens lists the tokens once per run.
func (s *session) pendingTokens() *tokens {
	t := &tokens{}
	t.listed, t.listErr = approval.Pending(s.r.opts.Root)
	rf, ok := s.r.git.(remoteFiles)
	if !ok {
		return t
	}
	files, err := rf.RemoteFiles(approval.Dir + "/")
	if err != nil {
		s.report.Warnings = append(s.report.Warnings, "the approval tokens of the remote branch could not be read: "+s.r.opts.Redact.String(err.Error()))
		return t
	}
	for p, raw := range files {
		if id, ok := strings.CutSuffix(path.Base(p), ".token"); ok && path.Dir(p) == approval.Dir {
			if t.branch == nil {
				t.branch = map[string][]byte{}
			}
			t.branch[strings.ToLower(id)] = raw
		}
	}
	return t
}

// of returns sc's tokens, each once; a checkout's token that cannot be
// read is reported (a pending directory that cannot be listed makes
// every schedule look, so that each says why).
func (s *session) tokensOf(t *tokens, sc *model.Schedule) [][]byte {
	var out [][]byte
	if t.listErr != nil || t.listed[strings.ToLower(sc.ID)] {
		raw, err := approval.Read(s.r.opts.Root, sc.ID)
		switch {
		case errors.Is(err, approval.ErrNoToken):
		case err != nil:
			s.report.Errors = append(s.report.Errors, fmt.Sprintf("%s: reading %s: %v", sc.Name, approval.Path(sc.ID), err))
		default:
			out = append(out, raw)
		}
	}
	if raw := t.branch[strings.ToLower(sc.ID)]; raw != nil && (len(out) == 0 || approval.Hash(raw) != approval.Hash(out[0])) {
		out = append(out, raw)
	}
	return out
}

// checkToken looks at one of sc's tokens. The bytes of an approved
// request wait to be used; a token signed by an approver may approve (see
// signed); anything else approves nothing and is recorded once: a copy of
// a pending request's token that reached the branch before its pull
// request was merged (ignored, the merge still counts), a used token put
// back, or bytes no approver signed and astra never wrote.
//
// A token is known by the hash of its bytes, or when an approver signed it
// by what the signature covers (Token.SignedID): rewriting a used signed
// token's bytes does not make it new.
func (s *session) checkToken(ctx context.Context, sc *model.Schedule, raw []byte) error {
	h := approval.Hash(raw)
	tok, perr := approval.Parse(raw)
	byBytes := h
	if perr == nil && tok.ApproverSignature != "" {
		h = tok.SignedID()
	}
	st := s.state()
	req := st.Approvals[sc.ID]
	if req != nil && (req.Token == h || req.Token == byBytes) {
		if req.Status == ledger.StatusApproved {
			return nil
		}
		why := "the token reached the branch before its request was approved: it approves nothing by itself"
		if req.PR != 0 {
			why = fmt.Sprintf("the token reached the branch before pull request #%d was merged: it approves nothing until an approver merges #%d", req.PR, req.PR)
		}
		return s.noteToken(sc, req, ledger.ApprovalIgnored, ledger.StatusIgnored, h, "", "", why, false)
	}
	_, used := st.Consumed[h]
	if _, usedBytes := st.Consumed[byBytes]; used || usedBytes {
		return s.noteToken(sc, nil, ledger.ApprovalRefused, ledger.StatusRefused, h, reasonUsed, "", "this token was already used: one approval is one run", true)
	}
	if perr != nil || tok.ApproverSignature == "" {
		why := "this token is not one astra wrote for an open request of this schedule (forged, edited or left over), and no approver signed it: it approves nothing"
		by := ""
		if tok != nil && tok.ApprovedBy != "" {
			by = tok.ApprovedBy
			why = fmt.Sprintf("this token names approved_by %s but carries no approver signature (`astra approve` signs with the approver's SSH key): "+
				"a token written by hand approves nothing, whoever it names", by)
		}
		return s.noteToken(sc, nil, ledger.ApprovalRefused, ledger.StatusRefused, h, reasonUnsigned, by, why, true)
	}
	return s.signed(ctx, sc, req, tok, h)
}

// signed checks a token an approver signed (`astra approve`) and records
// the approval, or why it approves nothing.
func (s *session) signed(ctx context.Context, sc *model.Schedule, req *state.Approval, tok *approval.Token, h string) error {
	refuse := func(reason, why string) error {
		return s.noteToken(sc, nil, ledger.ApprovalRefused, ledger.StatusRefused, h, reason, tok.ApprovedBy, why, true)
	}
	if tok.ScheduleID != sc.ID {
		return refuse(reasonNotBound, fmt.Sprintf("the token in %s approves schedule %q, not %s", approval.Path(sc.ID), tok.ScheduleID, sc.ID))
	}
	key, err := tok.VerifyApprover(s.r.cfg.Policies.SigningKeys)
	if err != nil {
		return refuse(reasonUnsigned, err.Error()+": it approves nothing")
	}
	id := identity.SignatureIdentity(tok.ApprovedBy)
	d := s.authorize(ctx, model.VerbApprove, id, sc)
	switch {
	case d.Undecided():
		return s.unchecked(sc, req, fmt.Sprintf("checking whether %s, who signed an approval, may approve", tok.ApprovedBy), d.Err)
	case !d.Allowed:
		return refuse(reasonNotApprover, fmt.Sprintf("the token is signed by %s, who may not approve %s (%s)", tok.ApprovedBy, sc.Name, d.Reason))
	case !s.now.Before(tok.ExpiresAt):
		return refuse(reasonExpired, fmt.Sprintf("the signed approval expired at %s", tok.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	var event json.RawMessage
	rollback := false
	switch {
	case req != nil && (req.Status == ledger.StatusPending || req.Status == ledger.StatusPartial):
		if tok.IdempotencyKey != req.Key {
			return refuse(reasonNotBound, fmt.Sprintf("the token approves %s, but the open request is for %s", orNone(tok.IdempotencyKey), req.Key))
		}
		if want := approval.DecodeAction(req.Action); tok.Action == nil || tok.Action.Hash != want.Hash {
			return refuse(reasonActionChanged, "the token approves another action than the one requested: "+changes(want, tok.Action))
		}
		event, rollback = req.Event, req.Rollback
	case req != nil:
		return refuse(reasonNotBound, fmt.Sprintf("an approval of %s is already waiting to run: one approval at a time", req.Key))
	case tok.IdempotencyKey != ledger.SlotKey(sc.ID, tok.Slot) || !plan.Undecided(sc, s.state(), tok.Slot, s.now):
		return refuse(reasonNotBound, fmt.Sprintf("nothing requested %s, and it is not a slot of %s still to come or due: it approves nothing", orNone(tok.IdempotencyKey), sc.Name))
	}
	now, err := s.r.action(sc, event, rollback)
	if err != nil {
		return refuse(reasonActionChanged, err.Error())
	}
	if tok.Action == nil || tok.Action.Hash != now.Hash {
		return refuse(reasonActionChanged, "what would run is not what was approved: "+changes(now, tok.Action))
	}
	need, have := s.r.cfg.Policies.ApprovalsRequired(sc), 1
	if need > 1 && req != nil {
		if req.ApprovedBy(tok.ApprovedBy) {
			return s.noteToken(sc, req, ledger.ApprovalIgnored, ledger.StatusIgnored, h, reasonRepeated, tok.ApprovedBy,
				fmt.Sprintf("%s already approved %s (%d of %d): it needs another approver of the role", tok.ApprovedBy, req.Key, len(req.Approvers()), need), true)
		}
		have += len(req.Approvers())
	}
	status, required := ledger.StatusApproved, 0
	if need > 1 {
		required = need
	}
	if have < need {
		status = ledger.StatusPartial
		// Counted: the token has done its part, and the next approver's
		// token takes its place.
		s.dropToken(sc.ID)
	}
	ev := s.approvalEvent(ledger.ApprovalApproved, status, sc, req)
	ev.Slot, ev.IdempotencyKey, ev.PayloadHash = tok.Slot, tok.IdempotencyKey, tok.PayloadHash
	ev.By, ev.ExpiresAt, ev.Comment = tok.ApprovedBy, tok.ExpiresAt, s.r.opts.Redact.String(tok.Comment)
	ev.Detail = detail(state.ApprovalDetail{Token: h, Action: tok.Action.Encode(), Event: event, Via: state.ViaSignature, Signer: key.Fingerprint(), Rollback: rollback,
		Proof: compactJSON(tok.Encode()), Required: required})
	msg := fmt.Sprintf("approved by %s (signed with %s, %s)", tok.ApprovedBy, key.Fingerprint(), d.Reason)
	if need > 1 {
		msg += fmt.Sprintf(": %d of %d approvers", have, need)
	}
	s.note(sc, ev, msg)
	if err := s.record(ev); err != nil {
		return err
	}
	if status == ledger.StatusApproved && req != nil && req.PR != 0 {
		// The signatures approved what the pull request asks: merging it
		// would approve nothing more.
		s.closePR(ctx, sc, req.PR, fmt.Sprintf("astra: %s was approved with signed approvals (`astra approve`), by %s; this pull request is no longer needed.",
			req.Key, strings.Join(foldIn(req.Approvers(), tok.ApprovedBy), ", ")))
	}
	return nil
}

// closePR closes an approval pull request a decision made moot. A failure
// is an outage the run outlives; a pull request merged meanwhile stays.
func (s *session) closePR(ctx context.Context, sc *model.Schedule, number int, comment string) {
	f := s.r.forge
	if f == nil || s.r.opts.DryRun {
		return
	}
	if err := f.ClosePullRequest(ctx, number, comment); err != nil && !errors.Is(err, forge.ErrMerged) {
		s.infra(sc, fmt.Sprintf("closing approval pull request #%d", number), err)
	}
}

// changes says how the action approved differs from want.
func changes(want approval.Action, got *approval.Action) string {
	if got == nil {
		return "the token binds no action"
	}
	return strings.Join(approval.Changes(*got, want), "; ")
}

func orNone(key string) string {
	if key == "" {
		return "no run"
	}
	return key
}

// noteToken records a token note once per token and kind, with who made
// the token when it says; drop removes the checkout's file (committed
// with the run, except on a state branch).
func (s *session) noteToken(sc *model.Schedule, req *state.Approval, kind ledger.Kind, status, token, reason, by, why string, drop bool) error {
	if drop {
		s.dropToken(sc.ID)
	}
	if _, done := s.state().Reported[state.ReportedKey(kind, token)]; done {
		return nil
	}
	ev := s.approvalEvent(kind, status, sc, req)
	ev.Reason, ev.By, ev.Error, ev.Detail = reason, by, s.r.opts.Redact.String(why), detail(state.ApprovalDetail{Token: token})
	if req != nil {
		ev.PR, ev.ExpiresAt = req.PR, req.ExpiresAt
	}
	s.note(sc, ev, ev.Error)
	return s.record(ev)
}

// compactJSON is b, valid JSON, on one line.
func compactJSON(b []byte) json.RawMessage {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return nil
	}
	return out.Bytes()
}
