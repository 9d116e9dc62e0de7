package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Forge is the part of GitHub that approvals use (internal/forge).
type Forge interface {
	EnsureApprovalPR(ctx context.Context, req forge.ApprovalRequest) (forge.PR, bool, error)
	PullRequest(ctx context.Context, number int) (forge.PR, error)
	ClosePullRequest(ctx context.Context, number int, comment string) error
	IsApprover(ctx context.Context, login string, allowed []string) (bool, error)
}

// grant is a usable approval for one schedule, found this run.
type grant struct {
	tokenID string
	key     string // the slot it approves; "" approves the next due run
	by      string
	pr      int
	expires time.Time
}

// checkApprovals settles what humans decided since the last run: valid
// token files (from a merged pull request or `astra approvals approve`)
// become grants, refused ones are recorded once, requests past their expiry
// expire, and pull requests closed without merging reject their request.
func (s *session) checkApprovals(ctx context.Context) error {
	s.grants = map[string]*grant{}
	st := s.state()
	for _, sc := range s.r.cfg.Schedules {
		req := st.Approvals[sc.ID]
		tok, raw, err := approval.Read(s.r.opts.Root, sc.ID)
		switch {
		case errors.Is(err, approval.ErrNoToken):
			if req != nil {
				if err := s.settleRequest(ctx, sc, req); err != nil {
					return err
				}
			}
			continue
		case raw == nil && err != nil:
			return err
		}
		id := approval.ID(raw)
		if st.TokenConsumed(id) {
			s.dropToken(sc.ID) // used already; the file is only left over
			continue
		}
		if _, refused := st.Refused[id]; refused {
			continue
		}
		if err != nil {
			if err := s.refuse(sc, req, id, time.Time{}, err.Error()); err != nil {
				return err
			}
			continue
		}
		g, problem, err := s.verifyToken(ctx, sc, tok, req)
		if err != nil {
			return err
		}
		switch {
		case problem != nil && problem.Expired:
			if err := s.expire(ctx, sc, req, tok.PR, id, tok.ExpiresAt); err != nil {
				return err
			}
		case problem != nil:
			if err := s.refuse(sc, req, id, tok.ExpiresAt, problem.Msg); err != nil {
				return err
			}
		default:
			g.tokenID = id
			s.grants[sc.ID] = g
			if req != nil && req.Status == ledger.StatusPending && (g.key == "" || g.key == req.Key) {
				g.key = req.Key
				if err := s.j.Record(&ledger.Event{Event: ledger.ApprovalApproved, ScheduleID: sc.ID, Slot: req.Slot,
					IdempotencyKey: req.Key, Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier),
					Status: ledger.StatusApproved, By: g.by, PR: g.pr, ExpiresAt: g.expires, TraceID: req.TraceID, Mode: ledger.ModeScheduled,
					Detail: tokenDetail(id)}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// verifyToken checks a token against the schedule as configured now and,
// with GitHub verification on, against its merged pull request and the
// approvers.
func (s *session) verifyToken(ctx context.Context, sc *model.Schedule, tok *approval.Token, req *state.Approval) (*grant, *approval.Problem, error) {
	key := ""
	if req != nil {
		key = req.Key
	}
	c := approval.Check{ScheduleID: sc.ID, Key: key, PayloadHash: approval.PayloadHash(sc.Payload), Now: s.now,
		Secret: s.r.opts.Secret, ViaPR: s.r.forge != nil}
	if p := tok.Verify(c); p != nil {
		return nil, p, nil
	}
	g := &grant{key: tok.IdempotencyKey, by: tok.ApprovedBy, pr: tok.PR, expires: tok.ExpiresAt}
	role := approverRole(s.r.cfg, sc)
	allowed := s.r.cfg.Policies.Approvers[role]
	if s.r.forge != nil {
		pr, err := s.r.forge.PullRequest(ctx, tok.PR)
		if err != nil {
			return nil, nil, fmt.Errorf("checking approval pull request #%d: %w", tok.PR, err)
		}
		if !pr.Merged {
			return nil, &approval.Problem{Msg: fmt.Sprintf("pull request #%d was not merged: the token reached the branch another way", tok.PR)}, nil
		}
		g.by = pr.MergedBy
		if len(allowed) > 0 {
			ok, err := s.r.forge.IsApprover(ctx, pr.MergedBy, allowed)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				return nil, &approval.Problem{Msg: fmt.Sprintf("%s merged pull request #%d but is not an approver (role %s: %s)",
					pr.MergedBy, tok.PR, role, strings.Join(allowed, ", "))}, nil
			}
		}
		return g, nil, nil
	}
	if len(allowed) > 0 && !slices.Contains(allowed, tok.ApprovedBy) {
		return nil, &approval.Problem{Msg: fmt.Sprintf("%s is not an approver (role %s: %s)", tok.ApprovedBy, role, strings.Join(allowed, ", "))}, nil
	}
	return g, nil, nil
}

// approverRole is the role whose members may approve runs of sc, from its
// task policy; "" when any approval will do.
func approverRole(cfg *model.Config, sc *model.Schedule) string {
	if tp := cfg.Policies.TaskPolicy(sc.TargetTool, sc.Tenant); tp != nil {
		return tp.ApproverRole
	}
	return ""
}

// settleRequest looks at an open request that has no token yet: it expires,
// or its pull request was closed without merging (rejected).
func (s *session) settleRequest(ctx context.Context, sc *model.Schedule, req *state.Approval) error {
	if !s.now.Before(req.ExpiresAt) {
		return s.expire(ctx, sc, req, req.PR, "", req.ExpiresAt)
	}
	if s.r.forge == nil || req.PR == 0 || req.Status != ledger.StatusPending {
		return nil
	}
	pr, err := s.r.forge.PullRequest(ctx, req.PR)
	if err != nil {
		return fmt.Errorf("checking approval pull request #%d: %w", req.PR, err)
	}
	if pr.State != "closed" || pr.Merged {
		return nil // open, or merged and the token not yet on this checkout
	}
	reason := pr.CloseComment
	if reason == "" {
		reason = "pull request closed without merging"
	}
	return s.j.Record(&ledger.Event{Event: ledger.ApprovalRejected, ScheduleID: sc.ID, Slot: req.Slot, IdempotencyKey: req.Key,
		Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusRejected, By: pr.ClosedBy,
		PR: req.PR, Error: reason, TraceID: req.TraceID, Mode: ledger.ModeScheduled})
}

func (s *session) expire(ctx context.Context, sc *model.Schedule, req *state.Approval, pr int, tokenID string, expires time.Time) error {
	ev := &ledger.Event{Event: ledger.ApprovalExpired, ScheduleID: sc.ID, Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool,
		Tier: int(sc.SafetyTier), Status: ledger.StatusExpired, PR: pr, ExpiresAt: expires, Mode: ledger.ModeScheduled}
	if req != nil {
		ev.Slot, ev.IdempotencyKey, ev.TraceID = req.Slot, req.Key, req.TraceID
	}
	if tokenID != "" {
		ev.Detail = tokenDetail(tokenID)
	}
	if err := s.j.Record(ev); err != nil {
		return err
	}
	if tokenID != "" {
		s.dropToken(sc.ID)
	}
	if s.r.forge != nil && pr != 0 && !s.r.opts.DryRun {
		msg := fmt.Sprintf("astra: this approval request expired at %s without being merged. The next due run will ask again.", expires.UTC().Format(time.RFC3339))
		if err := s.r.forge.ClosePullRequest(ctx, pr, msg); err != nil {
			return fmt.Errorf("closing expired approval pull request #%d: %w", pr, err)
		}
	}
	return nil
}

func (s *session) refuse(sc *model.Schedule, req *state.Approval, tokenID string, expires time.Time, why string) error {
	ev := &ledger.Event{Event: ledger.ApprovalRefused, ScheduleID: sc.ID, Actor: sc.Actor, Tenant: sc.Tenant,
		Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusRefused, Error: why, ExpiresAt: expires,
		Mode: ledger.ModeScheduled, Detail: tokenDetail(tokenID)}
	if req != nil {
		ev.Slot, ev.IdempotencyKey, ev.PR, ev.TraceID = req.Slot, req.Key, req.PR, req.TraceID
	}
	return s.j.Record(ev)
}

func tokenDetail(id string) json.RawMessage {
	b, _ := json.Marshal(state.ConsumedDetail{Token: id})
	return b
}

// dropToken deletes a used or expired token file (recorded in the commit).
// On a state branch the file lives on the default branch and stays; the
// ledger keeps it from being used twice.
func (s *session) dropToken(id string) {
	if s.r.opts.DryRun || s.r.opts.StateBranch {
		return
	}
	if err := approval.Remove(s.r.opts.Root, id); err == nil {
		s.removed = append(s.removed, approval.Path(id))
	}
}

// requestApproval records an approval request for a task the gates hold
// back, opening (or updating) its pull request when GitHub is configured.
func (s *session) requestApproval(ctx context.Context, t *task, d gate.Decision) error {
	sc := t.sched
	expires := s.now.Add(sc.ApprovalTTL.D())
	ev := &ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: sc.ID, Slot: t.slot, IdempotencyKey: t.key,
		Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusPending,
		Reason: ledger.ReasonApprovalPending, TraceID: t.traceID, Mode: t.mode, ExpiresAt: expires,
		PayloadHash: approval.PayloadHash(sc.Payload), Error: strings.Join(d.ApprovalReasons, "; ")}
	if d.Draft {
		res := s.r.dryRun(ctx, t)
		t.draft = &res
		ev.Output = s.r.tail(res.Output + res.WouldRun)
	}
	if s.r.forge != nil && !s.r.opts.DryRun {
		tok := &approval.Token{ScheduleID: sc.ID, ScheduleName: sc.Name, RequestedAt: s.now, ExpiresAt: expires, Slot: t.slot,
			IdempotencyKey: t.key, PayloadHash: ev.PayloadHash}
		req := forge.ApprovalRequest{
			ScheduleID: sc.ID, Title: fmt.Sprintf("astra: approve %s (%s)", sc.Name, t.slot.UTC().Format("2006-01-02 15:04 UTC")),
			Body: approvalBody(s.r, t, d, expires), Labels: approvalLabels(sc, d), Path: approval.Path(sc.ID),
			Token: func(pr int) []byte {
				c := *tok
				c.PR = pr
				c.Sign(s.r.opts.Secret)
				return c.Encode()
			},
		}
		pr, _, err := s.r.forge.EnsureApprovalPR(ctx, req)
		if err != nil {
			return fmt.Errorf("opening the approval pull request for %s: %w", sc.Name, err)
		}
		ev.PR = pr.Number
		t.outcome.PRURL = pr.URL
	}
	t.outcome.PR = ev.PR
	return s.record(ev)
}

func approvalLabels(sc *model.Schedule, d gate.Decision) []string {
	labels := []string{"astra:approval", fmt.Sprintf("tier-%d", sc.SafetyTier)}
	if d.Draft {
		labels = append(labels, "astra:draft")
	}
	return labels
}
