package state

import (
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// A completed manual or event key is remembered for KeyRetention from its
// completion, whatever the month: the checkpoint that opens December
// carries a key completed on November 2 (it was forgotten after 24 hours
// there, and a relayed webhook ran again on December 1), a replay of
// December alone still knows it, and 35 days after it completed the key is
// a new request.
func TestKeyRetentionAcrossMonths(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	clock := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	j := NewJournal(store, New(clock), ledger.Tail{}, func() time.Time { return clock }, false)
	const key = "onpaid@event:order.paid:42"
	done := &ledger.Event{Event: ledger.RunCompleted, ScheduleID: "onpaid", IdempotencyKey: key, Status: ledger.StatusOK, Mode: ledger.ModeEvent}
	if err := j.Record(done); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), true},
		{time.Date(2026, 12, 1, 0, 0, 30, 0, time.UTC), true}, // the first event of December: a checkpoint
		{time.Date(2026, 12, 7, 8, 59, 59, 0, time.UTC), true},
		{time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), false}, // 35 days
	} {
		clock = c.at
		if err := j.Record(&ledger.Event{Event: ledger.BudgetWarning, Status: ledger.StatusWarning}); err != nil {
			t.Fatal(err)
		}
		st, _, err := Replay(store, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if at, ok := st.Completed(key); ok != c.want || (ok && !at.Equal(done.TS)) {
			t.Errorf("at %s: completed %v (%s), want %v", c.at.Format(time.RFC3339), ok, at, c.want)
		}
	}
	segs, _ := store.Segments()
	if first, _ := ledger.First(root, segs[len(segs)-1]); first.Event != ledger.LedgerCheckpoint || first.TS.Month() != time.December {
		t.Fatalf("December does not open with a checkpoint: %+v", first)
	}
}
