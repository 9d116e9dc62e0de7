package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// Rollback is `astra rollback <run>`: the tool's compensating command
// runs for a completed run, through the same gates as the run, with the
// original run's id and output (ASTRA_ROLLBACK_OF, ASTRA_ORIGINAL_OUTPUT).
// The person running it must hold the rollback permission. When the
// schedule's runs need an approval, so does each rollback (rollbackApproval).
// A run is rolled back at most once unless force is set; rollback.completed
// or rollback.failed is recorded either way.
func (r *Runner) Rollback(ctx context.Context, run string, id identity.Identity, force bool) (*Report, error) {
	rep, err := r.rollback(ctx, run, id, force)
	if rep != nil && ctx.Err() != nil {
		rep.Interrupted = true
	}
	return rep, errkind.Default(err, errkind.ErrInfra)
}

func (r *Runner) rollback(ctx context.Context, run string, id identity.Identity, force bool) (*Report, error) {
	if err := r.pullState(ctx); err != nil {
		return nil, err
	}
	s, err := r.open(ctx, "rollback")
	if err != nil {
		return nil, err
	}
	target, sc, err := r.rollbackTarget(s.now, run)
	if err != nil {
		return nil, err
	}
	if err := s.permit(ctx, model.VerbRollback, target.RunID, id, sc); err != nil {
		return s.report, s.refused(ctx, err)
	}
	if at, done := s.state().RolledBack[target.RunID]; done && !force {
		return nil, errkind.Usagef("run %s was already rolled back at %s; rolling back twice needs --force", target.RunID, at.UTC().Format(time.RFC3339))
	}
	tool := r.cfg.Policies.Tools[sc.TargetTool]
	if tool == nil || len(tool.Rollback) == 0 {
		return nil, errkind.Usagef("tool %s has no rollback command: undo %s by hand (rollback is best-effort)", sc.TargetTool, target.RunID)
	}
	comp := *tool
	comp.Kind, comp.Command, comp.DryRunSupported = model.KindExec, tool.Rollback, false
	t := s.newTask(plan.KindManual, sc, target.Slot, target.Key+rollbackSuffix, ledger.ModeManual, 1, target.TraceID)
	t.tool, t.rollback = &comp, true
	t.outcome.Kind = "rollback"
	rd, _ := json.Marshal(state.RollbackDetail{Run: target.RunID})
	d := gate.Check(gate.Input{Schedule: sc, Policies: &r.cfg.Policies, State: s.state(), Now: s.now})
	if d.Action == gate.Skip {
		ev := t.event(ledger.RollbackFailed, ledger.StatusSkipped)
		ev.Reason, ev.Error, ev.By, ev.Detail = d.Reason, d.Detail, by(id), rd
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, d.Reason, d.Detail
		if err := s.record(ev); err != nil {
			return nil, err
		}
		return s.report, s.finish(ctx)
	}
	if reasons := r.cfg.Policies.ApprovalReasons(sc, tool); len(reasons) > 0 {
		// The compensating command acts on the outside world as the run
		// did: it needs an approval of its own, of its own action, every
		// time (--force asks again).
		ok, err := s.rollbackApproval(ctx, t, reasons)
		if err != nil || !ok {
			if err == nil && !r.opts.DryRun {
				err = s.finish(ctx)
			}
			return s.report, err
		}
	}
	req := r.request(t)
	req.Rollback = &executor.Rollback{RunID: target.RunID, Output: target.Output}
	if r.opts.DryRun {
		req.DryRun = true
		res := r.exec.Run(ctx, req)
		t.outcome.setResult(res, r.tail)
		t.outcome.Action = ActionWouldRun
		return s.report, nil
	}
	w := s.watchWrites(t)
	res := r.exec.Run(ctx, req)
	s.sortWrites(t, w, res)
	t.outcome.setResult(res, r.tail)
	kind, action := ledger.RollbackCompleted, ActionRan
	if res.Status != executor.StatusOK {
		kind, action = ledger.RollbackFailed, ActionFailed
	}
	ev := t.event(kind, res.Status)
	ev.Reason, ev.Error, ev.Usage, ev.Output, ev.By, ev.Detail = res.Reason, res.Error, res.Usage, r.tail(res.Output), by(id), rd
	t.outcome.Action = action
	if err := s.record(ev); err != nil {
		return nil, err
	}
	s.checkGlobalBudget(ctx)
	return s.report, s.finish(ctx)
}

// rollbackTarget finds the newest completed run that run names (a run id
// or an idempotency key) within RollbackWindow of now, and its schedule.
func (r *Runner) rollbackTarget(now time.Time, run string) (*introspect.Task, *model.Schedule, error) {
	since := now.Add(-state.RollbackWindow)
	found, err := introspect.Tasks(r.store(), now, introspect.Query{Status: "all", Since: since, Output: true})
	if err != nil {
		return nil, nil, errkind.Ledger(err, "")
	}
	var target *introspect.Task
	for i := range found {
		done := found[i].Status == "completed" || found[i].Status == "rolled_back"
		if done && (found[i].RunID == run || found[i].Key == run) {
			target = &found[i]
			break // newest first
		}
	}
	if target == nil {
		if m := introspect.Missing(r.store(), since); m != "" {
			return nil, nil, errkind.Usagef("no completed run %q in the ledger here; %s", run, m)
		}
		return nil, nil, errkind.Usagef("no completed run %q in the last two months (see `astra tasks list --status completed`)", run)
	}
	sc := r.cfg.Schedule(target.ScheduleID)
	if sc == nil {
		return nil, nil, errkind.Usagef("schedule %s of run %s is no longer configured", target.ScheduleID, run)
	}
	return target, sc, nil
}

// rollbackSuffix ends the key of a run's rollback: its approval is asked
// for and consumed under that key.
const rollbackSuffix = "#rollback"

// rollbackApproval settles what people decided, then finds t's approved
// rollback, checks it and records it consumed; without one, t's request
// is opened (or its open request waits). ok means the rollback may run.
func (s *session) rollbackApproval(ctx context.Context, t *task, reasons []string) (bool, error) {
	if err := s.checkApprovals(ctx); err != nil {
		return false, err
	}
	a := s.grantFor(t)
	if a == nil {
		open := s.state().Approvals[t.sched.ID]
		switch {
		case open != nil && open.Key == t.key:
			t.outcome.Action, t.outcome.Reason, t.outcome.PR = ActionAwaitingApproval, ledger.ReasonApprovalPending, open.PR
			t.outcome.Detail = "its approval request is open: " + approveHow(s.r.cfg, t.sched, open.PR)
			return false, nil
		case open != nil:
			return false, errkind.Usagef("%s has another approval open (%s): the rollback asks for its approval once that one is settled", t.sched.Name, open.Key)
		}
		err := s.requestApproval(ctx, t, gate.Decision{ApprovalReasons: reasons, Detail: "the rollback needs an approval of its own: " + approveHow(s.r.cfg, t.sched, 0)})
		return false, err
	}
	if ok, err := s.useGrant(ctx, t, a); !ok || err != nil {
		return false, err
	}
	if s.r.opts.DryRun {
		return true, nil
	}
	c := t.event(ledger.ApprovalConsumed, ledger.StatusConsumed)
	c.By, c.PR, c.ExpiresAt = a.By, a.PR, a.ExpiresAt
	c.Detail = detail(state.ApprovalDetail{Token: a.Token, Action: a.Action, Via: a.Via, Signer: a.Signer, Rollback: true})
	s.dropToken(t.sched.ID)
	return true, s.record(c)
}

// approveHow says how a waiting request is approved.
func approveHow(cfg *model.Config, sc *model.Schedule, pr int) string {
	if pr != 0 {
		return fmt.Sprintf("an approver merges pull request #%d, then run this again", pr)
	}
	return fmt.Sprintf("an approver runs `astra approve %s`, then run this again", cfg.Ref(sc))
}

// refused records a refusal that permit returned (outside dry runs), then
// returns it.
func (s *session) refused(ctx context.Context, err error) error {
	ref, ok := err.(*refusal)
	if !ok || s.r.opts.DryRun {
		return err
	}
	if rerr := s.record(ref.event()); rerr != nil {
		return rerr
	}
	if ferr := s.finish(ctx); ferr != nil {
		return ferr
	}
	return err
}
