package runner

import (
	"context"
	"sort"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/model"
)

// Decisions a human takes outside a run: each is recorded in the ledger
// and committed and pushed like a run's events, so every runner sees it.

// Reject records the rejection of sc's open approval request (the slot
// never runs) and removes its token file, if any.
func (r *Runner) Reject(ctx context.Context, sc *model.Schedule, by, reason string) (*Report, error) {
	return r.record(ctx, "reject", func(s *session) ([]*ledger.Event, error) {
		req := s.state().Approvals[sc.ID]
		if req == nil {
			return nil, usagef("%s has no pending approval request", sc.Name)
		}
		s.dropToken(sc.ID)
		return []*ledger.Event{{Event: ledger.ApprovalRejected, ScheduleID: sc.ID, Slot: req.Slot, IdempotencyKey: req.Key,
			Actor: sc.Actor, Tenant: sc.Tenant, Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusRejected, By: by,
			PR: req.PR, Error: reason, TraceID: req.TraceID, Mode: req.Mode}}, nil
	})
}

// ReleaseDeadLetters releases the dead letters of a schedule (by id) or
// one of them (by idempotency key): the next run-due retries them. It
// returns the keys released.
func (r *Runner) ReleaseDeadLetters(ctx context.Context, ref, by string) (*Report, []string, error) {
	var released []string
	rep, err := r.record(ctx, "dead-letter retry", func(s *session) ([]*ledger.Event, error) {
		var evs []*ledger.Event
		for key, d := range s.state().DeadLetters {
			if key != ref && d.ScheduleID != ref {
				continue
			}
			ev := &ledger.Event{Event: ledger.DeadLetterReleased, ScheduleID: d.ScheduleID, Slot: d.Slot, IdempotencyKey: key,
				Status: ledger.StatusReleased, TraceID: d.TraceID, Mode: d.Mode, By: by}
			if sc := r.cfg.Schedule(d.ScheduleID); sc != nil {
				ev.Actor, ev.Tenant, ev.Tool, ev.Tier = sc.Actor, sc.Tenant, sc.TargetTool, int(sc.SafetyTier)
			}
			evs = append(evs, ev)
			released = append(released, key)
		}
		if len(evs) == 0 {
			return nil, usagef("no dead letter matches %q (see `astra dead-letter list`)", ref)
		}
		sort.Slice(evs, func(i, j int) bool { return evs[i].IdempotencyKey < evs[j].IdempotencyKey })
		sort.Strings(released)
		return evs, nil
	})
	return rep, released, err
}

// Resume lifts the global-budget pause for the rest of its period and
// returns that period ("day" or "month").
func (r *Runner) Resume(ctx context.Context, by string) (*Report, string, error) {
	var period string
	rep, err := r.record(ctx, "budget resume", func(s *session) ([]*ledger.Event, error) {
		st := s.state()
		if st.Pause == nil {
			return nil, usagef("the global budget is not paused")
		}
		period = st.Pause.Period
		return []*ledger.Event{{Event: ledger.BudgetResumed, Status: ledger.StatusResumed, Period: period, By: by, SpentUSD: st.Spend.DayUSD}}, nil
	})
	return rep, period, err
}

// PurgeMemory quarantines the memory written by a schedule or a run
// (n entries, as counted by the caller from memory.Select).
func (r *Runner) PurgeMemory(ctx context.Context, task, by string, n int) (*Report, error) {
	return r.record(ctx, "memory purge", func(*session) ([]*ledger.Event, error) {
		return []*ledger.Event{memory.Purged(task, by, n)}, nil
	})
}

// RefuseTrigger records a trigger that was refused before anything ran
// (a missing or wrong signature).
func (r *Runner) RefuseTrigger(ctx context.Context, event, reason, why string) (*Report, error) {
	return r.record(ctx, "trigger", func(*session) ([]*ledger.Event, error) {
		return []*ledger.Event{{Event: ledger.TriggerRefused, Status: ledger.StatusRefused, Reason: reason, Error: why + " (event " + event + ")"}}, nil
	})
}

// record appends the events build returns (it sees the replayed state to
// check the request against), then commits and pushes them like a run.
func (r *Runner) record(ctx context.Context, command string, build func(s *session) ([]*ledger.Event, error)) (*Report, error) {
	s, err := r.open(command)
	if err != nil {
		return nil, err
	}
	evs, err := build(s)
	if err != nil {
		return nil, kinded(err)
	}
	if err := s.j.Record(evs...); err != nil {
		return nil, kinded(err)
	}
	return s.report, kinded(s.finish(ctx))
}
