package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

// Trigger is `astra trigger <event>`: every schedule with on_event: event
// runs now, through every gate (seed 002 event triggers). payload is the
// event's JSON, handed to tools as ASTRA_EVENT. The idempotency key
// defaults to a hash of event and payload, so a relayed event delivered
// twice runs once.
func (r *Runner) Trigger(ctx context.Context, event string, payload []byte, key string) (*Report, error) {
	if key == "" {
		sum := sha256.Sum256(append([]byte(event+"\x00"), payload...))
		key = hex.EncodeToString(sum[:8])
	}
	var scheds []*model.Schedule
	for _, sc := range r.cfg.Schedules {
		if sc.OnEvent == event && sc.Enabled && r.opts.Filter.Match(sc) {
			scheds = append(scheds, sc)
		}
	}
	if len(scheds) == 0 {
		return nil, usagef("no enabled schedule has on_event: %s", event)
	}
	return r.run(ctx, "trigger", func(s *session) ([]*task, error) {
		var tasks []*task
		for _, sc := range scheds {
			t := s.newTask(plan.KindEvent, sc, s.now, sc.ID+"@event:"+event+":"+key, ledger.ModeEvent, 1, "")
			t.eventData = string(payload)
			more, err := s.decideOne(ctx, t)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, more...)
		}
		return tasks, nil
	})
}

// Rollback is `astra rollback <run>` (seed 003 compensating actions): the
// tool's rollback command runs for a completed run, through the same gates
// (its tier is the schedule's, at least the tool's). The person running it
// is the approval; the CLI checks them against the approver role. It
// records rollback.completed or rollback.failed.
func (r *Runner) Rollback(ctx context.Context, run, by string) (*Report, error) {
	rep, err := r.rollback(ctx, run, by)
	return rep, kinded(err)
}

func (r *Runner) rollback(ctx context.Context, run, by string) (*Report, error) {
	s, err := r.open("rollback")
	if err != nil {
		return nil, err
	}
	found, err := introspect.Tasks(ledger.Open(r.opts.Root, r.opts.SegmentSize), s.now, introspect.Query{Status: "completed", Since: s.now.AddDate(0, -2, 0)})
	if err != nil {
		return nil, err
	}
	var target *introspect.Task
	for i := range found {
		if found[i].RunID == run || found[i].Key == run {
			target = &found[i]
			break // newest first
		}
	}
	if target == nil {
		return nil, usagef("no completed run %q in the last two months (see `astra tasks list --status completed`)", run)
	}
	sc := r.cfg.Schedule(target.ScheduleID)
	if sc == nil {
		return nil, usagef("schedule %s of run %s is no longer configured", target.ScheduleID, run)
	}
	if role := approverRole(r.cfg, sc); role != "" && !slices.Contains(r.cfg.Policies.Approvers[role], by) {
		return nil, usagef("%s may not roll back %s: task policy requires role %s (%s)", by, sc.Name, role, strings.Join(r.cfg.Policies.Approvers[role], ", "))
	}
	tool := r.cfg.Policies.Tools[sc.TargetTool]
	if tool == nil || len(tool.Rollback) == 0 {
		return nil, usagef("tool %s has no rollback command: undo %s by hand (rollback is best-effort)", sc.TargetTool, target.RunID)
	}
	comp := *tool
	comp.Kind, comp.Command, comp.DryRunSupported = model.KindExec, tool.Rollback, false
	t := s.newTask(plan.KindManual, sc, target.Slot, target.Key+"#rollback", ledger.ModeManual, 1, target.TraceID)
	t.tool = &comp
	t.outcome.Kind = "rollback"
	d := gate.Check(gate.Input{Schedule: sc, Policies: &r.cfg.Policies, State: s.state(), Now: s.now})
	if d.Action == gate.Skip {
		ev := t.event(ledger.RollbackFailed, ledger.StatusSkipped)
		ev.Reason, ev.Error, ev.By = d.Reason, d.Detail, by
		t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, d.Reason, d.Detail
		if err := s.j.Record(ev); err != nil {
			return nil, err
		}
		return s.report, s.finish(ctx)
	}
	var res executor.Result
	if r.opts.DryRun {
		res = r.dryRun(ctx, t)
		t.outcome.setResult(res, r.tail)
		t.outcome.Action = ActionWouldRun
		return s.report, nil
	}
	res = r.exec.Run(ctx, r.request(t))
	t.outcome.setResult(res, r.tail)
	kind, action := ledger.RollbackCompleted, ActionRan
	if res.Status != executor.StatusOK {
		kind, action = ledger.RollbackFailed, ActionFailed
	}
	ev := t.event(kind, res.Status)
	ev.Reason, ev.Error, ev.Usage, ev.Output, ev.By = res.Reason, res.Error, res.Usage, r.tail(res.Output), by
	t.outcome.Action = action
	if err := s.j.Record(ev); err != nil {
		return nil, err
	}
	s.checkGlobalBudget()
	return s.report, s.finish(ctx)
}
