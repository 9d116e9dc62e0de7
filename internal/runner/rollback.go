package runner

import (
	"context"
	"encoding/json"
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
// The person running it must hold the rollback permission. A run is
// rolled back at most once unless force is set; rollback.completed or
// rollback.failed is recorded either way.
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
	found, err := introspect.Tasks(ledger.Open(r.opts.Root, r.opts.SegmentSize), s.now,
		introspect.Query{Status: "all", Since: s.now.Add(-state.RollbackWindow)})
	if err != nil {
		return nil, errkind.Ledger(err, "")
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
		if m := introspect.Missing(ledger.Open(r.opts.Root, r.opts.SegmentSize), s.now.Add(-state.RollbackWindow)); m != "" {
			return nil, errkind.Usagef("no completed run %q in the ledger here; %s", run, m)
		}
		return nil, errkind.Usagef("no completed run %q in the last two months (see `astra tasks list --status completed`)", run)
	}
	sc := r.cfg.Schedule(target.ScheduleID)
	if sc == nil {
		return nil, errkind.Usagef("schedule %s of run %s is no longer configured", target.ScheduleID, run)
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
	t := s.newTask(plan.KindManual, sc, target.Slot, target.Key+"#rollback", ledger.ModeManual, 1, target.TraceID)
	t.tool = &comp
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
	s.settleWrites(t, w, res)
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
	s.checkGlobalBudget()
	return s.report, s.finish(ctx)
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
