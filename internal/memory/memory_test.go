package memory

import (
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

func TestRecallBudgets(t *testing.T) {
	var es []Entry
	for i := range 10 {
		es = append(es, Entry{ScheduleID: "s", RunID: "s@x#" + string(rune('0'+i)), EstimatedTokens: 100})
	}
	es[9].Purged = true
	got := Recall(es, model.Recall{MaxTokens: 350, MaxEntries: 10})
	if len(got) != 3 || got[0].RunID != "s@x#8" {
		t.Fatalf("token budget: %+v", got)
	}
	if got := Recall(es, model.Recall{MaxTokens: 10000, MaxEntries: 2}); len(got) != 2 {
		t.Fatalf("entry budget: %d", len(got))
	}
	if b := Budget(model.Recall{MaxEntries: 3}, "heartbeat"); b.MaxTokens != 500 || b.MaxEntries != 3 {
		t.Fatalf("defaults: %+v", b)
	}
	sc := &model.Schedule{Interval: model.Duration(time.Minute)}
	for _, c := range []struct {
		mode    string
		chained bool
		want    string
	}{{ledger.ModeScheduled, false, "heartbeat"}, {ledger.ModeManual, false, "interactive"}, {ledger.ModeEvent, false, "event"}, {ledger.ModeScheduled, true, "workflow"}} {
		if got := TaskType(sc, c.mode, c.chained); got != c.want {
			t.Errorf("TaskType(%s, %v) = %s", c.mode, c.chained, got)
		}
	}
	if TaskType(&model.Schedule{Cron: "0 9 * * *"}, ledger.ModeScheduled, false) != "scheduled" {
		t.Error("cron schedules are scheduled tasks")
	}
}

// TestReadAppliesPurges: entries written through the Journal are read back
// with their provenance; a purge quarantines by schedule or run.
func TestReadAppliesPurges(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	j := state.NewJournal(ledger.Open(root, 0), state.New(now), ledger.Tail{}, func() time.Time { return now }, false)
	run := func(id, slot string) *ledger.Event {
		return &ledger.Event{ScheduleID: id, IdempotencyKey: id + "@" + slot, Mode: ledger.ModeScheduled, TraceID: "t"}
	}
	if err := j.Record(Stored(run("a", "1"), "alpha one"), Stored(run("a", "2"), "alpha two"), Stored(run("b", "1"), "beta")); err != nil {
		t.Fatal(err)
	}
	es, err := Read(root, now)
	if err != nil || len(es) != 3 || es[0].Text != "alpha one" || es[0].EstimatedTokens != 3 || es[0].RunID != "a@1#1" {
		t.Fatalf("%+v %v", es, err)
	}
	if n := Select(es, "a"); n != 2 {
		t.Fatalf("select by schedule: %d", n)
	}
	if err := j.Record(Purged("a@2", "octocat", 1)); err != nil {
		t.Fatal(err)
	}
	es, _ = Read(root, now)
	if es[0].Purged || !es[1].Purged || es[2].Purged {
		t.Fatalf("purge by run key: %+v", es)
	}
	// The main ledger has the purge (audit) but not the stored texts.
	segs, _ := ledger.Open(root, 0).Segments()
	evs, _, _ := ledger.ReadAll(root, segs)
	for _, e := range evs {
		if e.Event == ledger.MemoryStored {
			t.Fatal("memory text reached the main ledger")
		}
	}
	if evs[len(evs)-1].Event != ledger.MemoryPurged {
		t.Fatal("purge not recorded in the ledger")
	}
}
