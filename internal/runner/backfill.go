package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

// Backfill asks for a backfill of the slots of one schedule in [From, To].
type Backfill struct {
	From, To time.Time
	Reason   string
	Max      int // most slots the range may hold; more is refused
}

// BackfillSlots are the slots of sc in [b.From, b.To] up to now (a slot
// not yet due is run-due's), refused when there are none or more than
// b.Max.
func BackfillSlots(sc *model.Schedule, b Backfill, now time.Time) ([]time.Time, error) {
	switch {
	case sc.Spec == nil:
		return nil, errkind.Usagef("schedule %q has no time trigger (cron, frequency, interval or at): it has no slots to backfill", sc.Name)
	case b.To.Before(b.From):
		return nil, errkind.Usagef("--to %s is before --from %s", b.To.Format(time.RFC3339), b.From.Format(time.RFC3339))
	case b.From.After(now):
		return nil, errkind.Usagef("--from %s is after now (%s): slots still to come are run-due's, backfill runs past ones",
			b.From.Format(time.RFC3339), now.Format(time.RFC3339))
	case b.Max < 1 || b.Max > model.MaxBackfillSlots:
		return nil, errkind.Usagef("--max %d: give 1 to %d", b.Max, model.MaxBackfillSlots)
	}
	to := b.To
	if to.After(now) {
		to = now
	}
	slots := sc.Spec.Slots(b.From.Add(-time.Nanosecond), to, b.Max+1)
	if len(slots) == 0 {
		return nil, errkind.Usagef("schedule %q has no slot from %s to %s", sc.Name, b.From.Format(time.RFC3339), b.To.Format(time.RFC3339))
	}
	if len(slots) > b.Max {
		return nil, errkind.WithHint(errkind.Usagef("schedule %q has more than %d slots from %s to %s: a backfill runs at most --max slots",
			sc.Name, b.Max, b.From.Format(time.RFC3339), b.To.Format(time.RFC3339)),
			fmt.Sprintf("narrow --from/--to, or raise --max (at most %d)", model.MaxBackfillSlots))
	}
	return slots, nil
}

// Backfill is `astra backfill`: a person with the backfill permission runs
// the past slots of sc in a range, each once under its own slot key and
// through every gate, as run-due would have. A slot that already
// completed is not run again (recorded as a duplicate); the request is
// recorded first as backfill.requested with who, the range and why.
func (r *Runner) Backfill(ctx context.Context, sc *model.Schedule, b Backfill, id identity.Identity) (*Report, error) {
	slots, err := BackfillSlots(sc, b, r.opts.Clock())
	if err != nil {
		return nil, err
	}
	if err := r.Permit(ctx, model.VerbBackfill, sc.Name, id, sc); err != nil {
		return nil, err
	}
	return r.run(ctx, "backfill", func(s *session) ([]*task, error) {
		d, _ := json.Marshal(map[string]any{"from": b.From.UTC(), "to": b.To.UTC(), "reason": b.Reason, "slots": len(slots)})
		if err := s.record(&ledger.Event{Event: ledger.BackfillRequested, ScheduleID: sc.ID, Status: ledger.StatusRequested, By: by(id), Detail: d,
			Error: fmt.Sprintf("%d slot(s) from %s to %s: %s", len(slots), b.From.UTC().Format(time.RFC3339), b.To.UTC().Format(time.RFC3339), b.Reason)}); err != nil {
			return nil, err
		}
		done, err := r.completedSlots(sc, slots)
		if err != nil {
			return nil, err
		}
		var tasks []*task
		for _, slot := range slots {
			t := s.newTask(plan.KindSlot, sc, slot, ledger.SlotKey(sc.ID, slot), ledger.ModeScheduled, 1, "")
			if at, ok := done[t.key]; ok {
				detail := "slot " + t.key + " already completed at " + at.UTC().Format(time.RFC3339)
				if err := s.skip(t, ledger.ReasonDuplicate, detail); err != nil {
					return nil, err
				}
				continue
			}
			ts, err := s.decideOne(ctx, t)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, ts...)
		}
		return tasks, nil
	})
}

// completedSlots finds which of sc's slots completed, reading the ledger
// from the month of the first: the state keeps no per-slot record of a
// schedule's own slots (its last decided slot stands for them), and a
// backfill runs slots that state says are decided.
func (r *Runner) completedSlots(sc *model.Schedule, slots []time.Time) (map[string]time.Time, error) {
	want := map[string]bool{}
	for _, t := range slots {
		want[ledger.SlotKey(sc.ID, t)] = true
	}
	segs, err := ledger.Open(r.opts.Root, 0).Segments()
	if err != nil {
		return nil, errkind.Infraf("listing the ledger's files: %w", err)
	}
	from := ledger.Month(slots[0])
	for len(segs) > 0 && segs[0].Month < from {
		segs = segs[1:]
	}
	done := map[string]time.Time{}
	_, err = ledger.Scan(r.opts.Root, segs, ledger.ScanOptions{SkipOutput: true}, func(e *ledger.Event) error {
		if e.Event == ledger.RunCompleted && e.ScheduleID == sc.ID && want[e.IdempotencyKey] {
			done[e.IdempotencyKey] = e.TS
		}
		return nil
	})
	if err != nil {
		return nil, errkind.Ledger(fmt.Errorf("reading the ledger for the slots that completed: %w", err), "run `astra ledger verify`")
	}
	return done, nil
}
