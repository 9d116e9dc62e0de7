package introspect

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// appendAll writes events to a new ledger whose files roll over at
// segmentSize bytes, one append per event.
func appendAll(t *testing.T, segmentSize int64, events []*ledger.Event) *ledger.Store {
	t.Helper()
	store := ledger.Open(t.TempDir(), segmentSize).NoSync()
	var tail ledger.Tail
	for _, e := range events {
		c := *e
		seg, _ := store.Target(tail, c.TS)
		var err error
		if tail, err = store.Append(tail, seg, []*ledger.Event{&c}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// A history read file by file from the newest back gives what one file of
// the same events gives: runs whose outcome is in a newer file than their
// claim, rollbacks of runs in older files, runs claimed before the window,
// every status and limit.
func TestTasksAcrossFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := now.Add(-10 * time.Hour)
	var events, outcomes []*ledger.Event
	var completed []string
	for i := range 300 {
		at := start.Add(time.Duration(i) * time.Minute)
		// Outcomes due by now are written first, in time order.
		for len(outcomes) > 0 && !outcomes[0].TS.After(at) {
			o := outcomes[0]
			outcomes = outcomes[1:]
			events = append(events, o)
			if o.Event == ledger.RunCompleted {
				completed = append(completed, o.RunID())
			}
		}
		id := fmt.Sprintf("s%d", i%7)
		slot := at.Add(-time.Duration(i%3) * time.Second)
		switch r := rng.IntN(10); {
		case r < 2:
			events = append(events, with(ev(ledger.RunSkipped, id, slot, 0), func(e *ledger.Event) { e.TS = at; e.Reason = ledger.ReasonBudget }))
		case r < 3 && len(completed) > 0:
			d, _ := json.Marshal(state.RollbackDetail{Run: completed[len(completed)-1-rng.IntN(min(len(completed), 20))]})
			events = append(events, &ledger.Event{Event: ledger.RollbackCompleted, TS: at, IdempotencyKey: "rollback:x", Detail: d})
		default:
			events = append(events, with(ev(ledger.RunClaimed, id, slot, 0), func(e *ledger.Event) { e.TS = at }))
			kind := ledger.RunCompleted
			if r == 9 {
				kind = ledger.RunFailed
			}
			if r != 8 || i%2 == 0 { // some stay open
				o := with(ev(kind, id, slot, 0), func(e *ledger.Event) { e.TS = at.Add(time.Duration(1+rng.IntN(40)) * time.Minute) })
				i := byTime(outcomes, o)
				outcomes = slices.Insert(outcomes, i, o)
			}
		}
	}
	events = append(events, outcomes...)

	one := appendAll(t, 0, events)
	many := appendAll(t, 2000, events)
	if segs, _ := many.Segments(); len(segs) < 10 {
		t.Fatalf("want many files, got %d", len(segs))
	}
	for _, since := range []time.Time{{}, start.Add(3 * time.Hour)} {
		for _, status := range []string{"", "all", "running", "completed", "failed", "skipped", "rolled_back"} {
			q := Query{Status: status, Since: since}
			want, err := Tasks(one, now, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Tasks(many, now, q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(runIDs(got), runIDs(want)) {
				t.Fatalf("since %s, status %q: many files\n got  %q\n want %q", since, status, runIDs(got), runIDs(want))
			}
			if len(want) < 3 {
				t.Fatalf("since %s, status %q: too few tasks to compare (%d)", since, status, len(want))
			}
			for _, limit := range []int{1, 3, len(want) / 2} {
				q.Limit = limit
				got, err := Tasks(many, now, q)
				if err != nil || !slices.Equal(runIDs(got), runIDs(want[:limit])) {
					t.Fatalf("since %s, status %q, limit %d: %v\n got  %q\n want %q", since, status, limit, err, runIDs(got), runIDs(want[:limit]))
				}
			}
		}
	}
}

// byTime is where o goes among outcomes ordered by time.
func byTime(outcomes []*ledger.Event, o *ledger.Event) int {
	i, _ := slices.BinarySearchFunc(outcomes, o, func(a, b *ledger.Event) int { return a.TS.Compare(b.TS) })
	return i
}
