package state

import (
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// A journal on a test clock marks what it dates, and the checkpoint of a
// month such an event opens; an event recorded again (a run's leftovers,
// a rebase after a lost race) keeps the clock that dated it.
func TestMarkClock(t *testing.T) {
	store := ledger.Open(t.TempDir(), 0)
	clock := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	j := NewJournal(store, New(clock), ledger.Tail{}, func() time.Time { return clock }, false)
	j.MarkClock(ledger.ClockTest)
	again := &ledger.Event{TS: clock.Add(-time.Hour), Event: ledger.BudgetWarning, Status: ledger.StatusWarning}
	if err := j.Record(&ledger.Event{Event: ledger.BudgetWarning, Status: ledger.StatusWarning}, again); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Hour) // December: a checkpoint first
	if err := j.Record(&ledger.Event{Event: ledger.BudgetWarning, Status: ledger.StatusWarning}); err != nil {
		t.Fatal(err)
	}
	segs, _ := store.Segments()
	evs, _, err := ledger.ReadAll(store.Root(), segs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Event)+":"+e.Clock)
	}
	want := "budget.warning:test budget.warning: ledger.checkpoint:test budget.warning:test"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("got %s\nwant %s", s, want)
	}
}
