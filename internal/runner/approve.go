package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// ApprovalDraft is the token `astra approve` signs, and what it approves
// in words.
type ApprovalDraft struct {
	Token *approval.Token
	What  string // "the run requested for …", "deploy's run at …"
}

// DraftApproval builds the token that approver signs with `astra approve`
// for one run of sc: its open request, or, when nothing is pending, its
// next slot (one due and not yet decided, else the next fire time). The
// token binds that run's action; for an open request it is the action
// the request recorded, which the action computed here must match in
// everything but astra's version, so the person approves what they see.
// ttl is how long the approval stays valid, 0 for the schedule's
// approval_ttl. Nothing is recorded.
func (r *Runner) DraftApproval(ctx context.Context, sc *model.Schedule, approver string, ttl time.Duration) (*ApprovalDraft, error) {
	if err := r.pullState(ctx); err != nil {
		return nil, err
	}
	s, err := r.open(ctx, "approve")
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = sc.ApprovalTTL.D()
	}
	st, now := s.state(), s.now
	tok := &approval.Token{ScheduleID: sc.ID, ScheduleName: sc.Name, ApprovedBy: approver, ApprovedAt: now}
	req := st.Approvals[sc.ID]
	switch {
	case req != nil && req.Status == ledger.StatusApproved:
		return nil, errkind.Usagef("%s's run %s is already approved (by %s) and waits to run", sc.Name, req.Key, req.By)
	case req != nil && req.ApprovedBy(approver):
		return nil, errkind.Usagef("%s already approved %s's run %s (%d of %d approvers): another approver of the role must approve it", approver, sc.Name, req.Key, len(req.Quorum.Approvers), req.Quorum.Required)
	case req != nil && req.PR != 0 && r.cfg.Policies.ApprovalsRequired(sc) < 2:
		return nil, errkind.Usagef("%s's request is pull request #%d: approve it by merging the pull request", sc.Name, req.PR)
	case req != nil:
		requested := approval.DecodeAction(req.Action)
		local, err := r.action(sc, req.Event, req.Rollback)
		if err != nil {
			return nil, errkind.Usage(err)
		}
		// The approver's astra may be another build than the one that
		// requested: the request's version is what the run will compare.
		if diff := approval.Changes(requested, local.WithVersionOf(requested)); len(diff) > 0 {
			return nil, &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("what %s's request would run is not what this checkout has: %s", sc.Name, strings.Join(diff, "; ")),
				Hint: "Bring the checkout up to date (git pull) to see what you approve, then approve again."}
		}
		tok.Slot, tok.IdempotencyKey, tok.RequestedAt, tok.PayloadHash = req.Slot, req.Key, req.RequestedAt, req.PayloadHash
		tok.ExpiresAt, tok.Action = now.Add(ttl), &requested
		what := "the run requested for " + req.Slot.UTC().Format(time.RFC3339)
		if req.Rollback {
			what = "the rollback of " + strings.TrimSuffix(req.Key, rollbackSuffix)
		}
		return &ApprovalDraft{Token: tok, What: what}, nil
	}
	tool := r.cfg.Policies.Tools[sc.TargetTool]
	if tool == nil || len(r.cfg.Policies.ApprovalReasons(sc, tool)) == 0 {
		return nil, &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("%s never needs an approval, so there is nothing to approve", sc.Name),
			Hint: fmt.Sprintf("Run it now with `astra run %s`; its slots run on their own.", r.cfg.Ref(sc))}
	}
	slot := nextSlot(sc, st, now)
	if slot.IsZero() {
		why := fmt.Sprintf("%s has no slot to come", sc.Name)
		if sc.OnEvent != "" {
			why = fmt.Sprintf("%s runs on event %s, and no triggered run waits for approval: approve the request a trigger makes", sc.Name, sc.OnEvent)
		}
		return nil, errkind.Usagef("nothing to approve: %s", why)
	}
	act, err := r.action(sc, nil, false)
	if err != nil {
		return nil, errkind.Usage(err)
	}
	tok.Slot, tok.IdempotencyKey, tok.RequestedAt = slot, ledger.SlotKey(sc.ID, slot), slot
	tok.PayloadHash, tok.Action = approval.PayloadHash(sc.Payload, nil), &act
	tok.ExpiresAt = later(slot, now).Add(ttl)
	return &ApprovalDraft{Token: tok, What: fmt.Sprintf("%s's run at %s", sc.Name, slot.UTC().Format(time.RFC3339))}, nil
}

// nextSlot is the slot an approval with nothing pending binds: a due slot
// no run took up yet, else the next fire time; zero when there is none.
func nextSlot(sc *model.Schedule, st *state.State, now time.Time) time.Time {
	u := plan.UpcomingOf(sc, st, now, 1)
	var due time.Time
	for _, c := range u.Due {
		if c.Kind == plan.KindSlot && c.Slot.After(due) {
			due = c.Slot
		}
	}
	if !due.IsZero() {
		return due
	}
	if len(u.Next) > 0 {
		return u.Next[0]
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// publisher is gitops.Repo: a commit of astra's own onto a branch of the
// remote, built from trees, beside the checkout.
type publisher interface {
	HasRemote() bool
	Branch() string
	FetchBranch(ctx context.Context, branch string) (string, error)
	PushFiles(ctx context.Context, branch, parent string, paths []string, files map[string][]byte, msg string) (string, error)
}

// PublishApproval pushes a signed token to the branch astra commits to,
// as astra's own commit holding that one file, on top of the remote's
// tip: the checkout, its branch and any commit of the person's are left
// alone, so nothing of theirs is published with it. It returns the branch
// and the commit; an empty branch means there is no remote to push to.
func (r *Runner) PublishApproval(ctx context.Context, tok *approval.Token) (branch, commit string, err error) {
	p, ok := r.git.(publisher)
	if !ok || !p.HasRemote() {
		return "", "", nil
	}
	branch = p.Branch()
	raw := tok.Encode()
	path := approval.Path(tok.ScheduleID)
	msg := fmt.Sprintf("astra: approval of %s's %s by %s", tok.ScheduleName, tok.IdempotencyKey, tok.ApprovedBy)
	for attempt := 0; ; attempt++ {
		tip, err := p.FetchBranch(ctx, branch)
		if err != nil {
			return branch, "", errkind.Infraf("fetching %s: %w", branch, err)
		}
		if tip == "" {
			return branch, "", errkind.Usagef("the remote has no branch %s yet: run `astra run-due` once first", branch)
		}
		commit, err = p.PushFiles(ctx, branch, tip, []string{path}, map[string][]byte{path: raw}, msg)
		switch {
		case err == nil:
			return branch, commit, nil
		case errors.Is(err, gitops.ErrRejected) && attempt < 4:
			continue // the branch moved between the fetch and the push
		case errors.Is(err, gitops.ErrProtected):
			return branch, "", &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("publishing the approval: %w", err),
				Hint: fmt.Sprintf("Write it with `astra approve %s --no-push` and merge it through a pull request: the signature, not who pushes, is what counts.", r.approveRef(tok))}
		}
		return branch, "", errkind.Default(fmt.Errorf("publishing the approval: %w", err), errkind.ErrInfra)
	}
}

// approveRef is what `astra approve` takes for tok's schedule: its
// name, or its id when several schedules share the name.
func (r *Runner) approveRef(tok *approval.Token) string {
	if sc := r.cfg.Schedule(tok.ScheduleID); sc != nil {
		return r.cfg.Ref(sc)
	}
	return tok.ScheduleID
}
