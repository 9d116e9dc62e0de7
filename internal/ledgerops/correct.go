package ledgerops

import (
	"errors"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// CorrectClock works out the correction of a wrong clock (astra ledger
// correct-clock): what st, the ledger replayed at now, would have voided
// of what was decided after after, and which of the schedules' own slots
// after after a run claimed (ran, or may have), which the ledger's
// history says and a replayed state does not. Those slots count as done:
// when their time comes they are recorded as duplicates, never run again.
// The caller records the result as the Detail of a ledger.clock_corrected
// event, which replay applies (state.Correction).
//
// after may not lie after now: a correction voids what a clock ahead of
// the real one decided, and now is a clock held to a trusted time. A
// correction that would change nothing is refused.
func CorrectClock(store *ledger.Store, st *state.State, after, now time.Time, reason string) (*state.Correction, error) {
	after, now = after.UTC(), now.UTC()
	if after.After(now) {
		return nil, errkind.Usagef("--after %s is later than now (%s): a correction voids what a clock ahead decided, after a time the right clock has passed",
			after.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	c := st.Voids(after, now)
	c.Reason = reason
	early, err := ranAfter(store, after)
	if err != nil {
		return nil, err
	}
	c.Early = early
	if c.Empty() {
		return nil, errkind.Usagef("nothing was decided after %s that a correction would void: no schedule's last slot, claim, retry, approval request, "+
			"completed key or run start lies after it",
			after.Format(time.RFC3339))
	}
	return &c, nil
}

// startSegment is the index of the newest month whose checkpoint is not
// after after, from which a scan sees every run after it; a usage error when
// this checkout's ledger does not reach back that far.
func startSegment(store *ledger.Store, segs []ledger.Segment, after time.Time) (int, error) {
	from := 0
	for i := len(segs) - 1; i > 0; i-- {
		if segs[i].Index != 0 || segs[i].Month == "" {
			continue
		}
		first, err := ledger.First(store.Root(), segs[i])
		if err != nil {
			return 0, errkind.Ledger(err, "")
		}
		if first != nil && first.Event == ledger.LedgerCheckpoint && !first.TS.After(after) {
			from = i
			break
		}
	}
	if len(segs) > 0 {
		first, err := ledger.First(store.Root(), segs[from])
		if err != nil {
			return 0, errkind.Ledger(err, "")
		}
		if first != nil && first.Seq != 1 && (first.Event != ledger.LedgerCheckpoint || first.TS.After(after)) {
			return 0, errkind.Usagef("the ledger since %s is not all in this checkout (%s starts at seq %d): correct the clock from a full clone",
				after.Format(time.RFC3339), segs[from].Path, first.Seq)
		}
	}
	return from, nil
}

// ranAfter lists the own slots after after that a run claimed at a time
// after after: key -> slot. It reads the ledger from the newest month
// that opens with a checkpoint dated at or before after (every event
// before such a checkpoint is dated before it: a month's file holds no
// event of a later month), else from its start.
func ranAfter(store *ledger.Store, after time.Time) (map[string]time.Time, error) {
	segs, err := store.Segments()
	if err != nil {
		return nil, errkind.Ledger(err, "")
	}
	from, err := startSegment(store, segs, after)
	if err != nil {
		return nil, err
	}
	early := map[string]time.Time{}
	_, err = ledger.Scan(store.Root(), segs[from:], ledger.ScanOptions{SkipOutput: true}, func(e *ledger.Event) error {
		if !e.TS.After(after) || !e.Slot.After(after) || e.Mode != ledger.ModeScheduled || e.IdempotencyKey != ledger.SlotKey(e.ScheduleID, e.Slot) {
			return nil
		}
		switch e.Event {
		case ledger.RunClaimed, ledger.RunStarted, ledger.RunCompleted, ledger.RunFailed, ledger.RunRetryScheduled, ledger.RunDeadLettered:
			early[e.IdempotencyKey] = e.Slot
		}
		return nil
	})
	var ce *ledger.CorruptError
	if errors.As(err, &ce) {
		return nil, errkind.Ledger(err, RepairHint(ce))
	}
	if err != nil {
		return nil, errkind.Ledger(fmt.Errorf("reading the ledger since %s: %w", after.Format(time.RFC3339), err), "")
	}
	return early, nil
}
