package ledgerops

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// at is a time of these tests.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// slotEvent is an event about schedule h's own slot, recorded at ts.
func slotEvent(kind ledger.Kind, ts, slot string) *ledger.Event {
	return &ledger.Event{TS: at(ts), Event: kind, ScheduleID: "h", Slot: at(slot), IdempotencyKey: ledger.SlotKey("h", at(slot)),
		Mode: ledger.ModeScheduled, Status: ledger.StatusOK, Attempt: 1, ExpiresAt: at(ts).Add(15 * time.Minute)}
}

// aheadLedger is a ledger that a runner a year ahead wrote into (its
// month opens with a checkpoint dated a year ahead), then the right clock.
func aheadLedger(t *testing.T) (*ledger.Store, *state.State) {
	t.Helper()
	store := ledger.Open(t.TempDir(), 0)
	var clock time.Time
	j := state.NewJournal(store, state.New(at("2026-11-22T00:00:00Z")), ledger.Tail{}, func() time.Time { return clock }, false)
	for _, e := range []*ledger.Event{
		{TS: at("2026-11-22T00:00:30Z"), Event: ledger.ScheduleCreated, ScheduleID: "h", Status: ledger.StatusOK, PayloadHash: "sha256:x"},
		slotEvent(ledger.RunClaimed, "2026-11-22T01:00:30Z", "2026-11-22T01:00:00Z"),
		slotEvent(ledger.RunCompleted, "2026-11-22T01:00:40Z", "2026-11-22T01:00:00Z"),
		// A year ahead: one slot ran, one was skipped, one is claimed and
		// never finished.
		slotEvent(ledger.RunClaimed, "2027-11-22T00:00:30Z", "2027-11-22T00:00:00Z"),
		slotEvent(ledger.RunCompleted, "2027-11-22T00:00:40Z", "2027-11-22T00:00:00Z"),
		{TS: at("2027-11-22T01:00:30Z"), Event: ledger.RunSkipped, ScheduleID: "h", Slot: at("2027-11-22T01:00:00Z"),
			IdempotencyKey: ledger.SlotKey("h", at("2027-11-22T01:00:00Z")), Mode: ledger.ModeScheduled, Status: ledger.StatusSkipped, Reason: ledger.ReasonBudget},
		slotEvent(ledger.RunClaimed, "2027-11-22T02:00:30Z", "2027-11-22T02:00:00Z"),
		// The right clock again.
		{TS: at("2026-11-22T05:00:30Z"), Event: ledger.BudgetWarning, Status: ledger.StatusWarning},
	} {
		clock = e.TS
		if err := j.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _ := store.Segments(); len(segs) != 2 || segs[1].Month != "2027-11" {
		t.Fatalf("segments %+v", segs)
	}
	st, _, err := state.Replay(store, at("2026-11-22T05:10:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	return store, st
}

// What a correction voids: the schedule's last slot, the claim the wrong
// clock left open, and the slots it claimed, read from the ledger across
// the checkpoint it dated a year ahead (a skipped slot never ran).
func TestCorrectClock(t *testing.T) {
	store, st := aheadLedger(t)
	c, err := CorrectClock(store, st, at("2026-11-22T01:30:00Z"), at("2026-11-22T05:10:00Z"), "runner-3 was a year ahead")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Slots["h"]; !got.Equal(at("2027-11-22T02:00:00Z")) || len(c.Slots) != 1 {
		t.Errorf("slots %v", c.Slots)
	}
	if len(c.Early) != 2 || !c.Early["h@2027-11-22T00:00:00Z"].Equal(at("2027-11-22T00:00:00Z")) || c.Early["h@2027-11-22T02:00:00Z"].IsZero() {
		t.Errorf("early %v", c.Early)
	}
	if len(c.Claims) != 1 || c.Claims[0] != "h@2027-11-22T02:00:00Z" || c.Reason != "runner-3 was a year ahead" {
		t.Errorf("claims %v, reason %q", c.Claims, c.Reason)
	}
}

// T after now is refused (a correction voids what a clock ahead decided),
// and so is a correction that voids nothing.
func TestCorrectClockRefuses(t *testing.T) {
	store, st := aheadLedger(t)
	for _, c := range []struct{ after, want string }{
		{"2026-11-22T06:00:00Z", "is later than now"},
		{"2028-01-01T00:00:00Z", "is later than now"},
	} {
		if _, err := CorrectClock(store, st, at(c.after), at("2026-11-22T05:10:00Z"), "x"); !errors.Is(err, errkind.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--after %s: %v", c.after, err)
		}
	}
	right := ledger.Open(t.TempDir(), 0)
	j := state.NewJournal(right, state.New(at("2026-11-22T00:00:00Z")), ledger.Tail{}, func() time.Time { return at("2026-11-22T01:00:30Z") }, false)
	if err := j.Record(slotEvent(ledger.RunCompleted, "2026-11-22T01:00:30Z", "2026-11-22T01:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if _, err := CorrectClock(right, j.State(), at("2026-11-22T02:00:00Z"), at("2026-11-22T05:10:00Z"), "x"); !errors.Is(err, errkind.ErrUsage) ||
		!strings.Contains(err.Error(), "nothing was decided after 2026-11-22T02:00:00Z") {
		t.Errorf("nothing to void: %v", err)
	}
}
