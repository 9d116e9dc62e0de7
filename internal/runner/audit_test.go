package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/ledger"
)

// Slots the catch-up policy leaves out are recorded, once per schedule and
// run, as one catchup.dropped event with their count and bounds.
func TestDroppedSlotsAreRecorded(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: h, name: h, cron: "0 * * * *", target_tool: work, per_day_budget: 50}
  - {id: s, name: s, cron: "0 * * * *", target_tool: work, per_day_budget: 50, catchup: {policy: skip, window: 1m}}
`)
	e.runDue("2026-11-22T00:00:30Z")
	e.runDue("2026-11-22T01:00:30Z")
	e.runDue("2026-11-22T05:30:00Z") // 02:00..04:00 dropped for h; s is too late for 05:00 as well
	var got []DroppedDetail
	for _, ev := range e.events() {
		if ev.Event != ledger.CatchupDropped {
			continue
		}
		var d DroppedDetail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			t.Fatal(err)
		}
		if ev.Reason != ledger.ReasonMissed || !strings.Contains(ev.Error, "3 missed slot(s) from 2026-11-22T02:00:00Z to 2026-11-22T04:00:00Z") {
			t.Errorf("%s: %s %q", ev.ScheduleID, ev.Reason, ev.Error)
		}
		got = append(got, d)
	}
	if len(got) != 2 {
		t.Fatalf("%d catchup.dropped events, want one per schedule: %+v", len(got), got)
	}
	for _, d := range got {
		if d.Count != 3 || d.First.Hour() != 2 || d.Last.Hour() != 4 || d.For != strings.SplitN(d.For, "@", 2)[0]+"@2026-11-22T05:00:00Z" {
			t.Errorf("dropped %+v", d)
		}
	}
	// Nothing was dropped since: no new event.
	e.runDue("2026-11-22T06:00:30Z")
	if n := e.count(ledger.CatchupDropped, ""); n != 2 {
		t.Fatalf("%d catchup.dropped events after a punctual run, want 2", n)
	}
}

// run_immediately runs once when the schedule is first seen: on the
// repository's first run and when it is added to one astra already runs.
func TestRunImmediately(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: now, name: now, run_immediately: true, target_tool: work}
`)
	rep := e.runDue("2026-11-22T09:17:40Z")
	if o := outcome(t, rep, "now"); o.Action != ActionRan {
		t.Fatalf("first run: %s %s", o.Action, o.Detail)
	}
	e.runDue("2026-11-22T09:30:00Z")
	if n := e.exec.runs("now"); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
	// Added later, next to a schedule that has been running.
	e.reload(`schedules:
  - {id: now, name: now, run_immediately: true, target_tool: work}
  - {id: later, name: later, run_immediately: true, cron: "0 0 1 1 *", target_tool: work}
`)
	rep = e.runDue("2026-11-22T10:02:10Z")
	if o := outcome(t, rep, "later"); o.Action != ActionRan || o.Slot.Format(time.RFC3339) != "2026-11-22T10:02:00Z" {
		t.Fatalf("added later: %s %s at %s", o.Action, o.Detail, o.Slot)
	}
	e.runDue("2026-11-22T11:00:00Z")
	if n := e.exec.runs("later"); n != 1 {
		t.Fatalf("later ran %d times, want once", n)
	}
}

// Every event about a run carries the hash of what its tool receives and
// the autonomy level it ran under; schedule changes name their file.
func TestRunEventsCarryPayloadHashAndAutonomy(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 9 * * *", target_tool: work, payload: {n: 1}, autonomy: L2}
`)
	e.runDue("2026-11-22T08:00:00Z")
	e.runDue("2026-11-22T09:00:30Z")
	want := approval.PayloadHash(map[string]any{"n": 1}, nil)
	kinds := map[ledger.Kind]bool{}
	for _, ev := range e.events() {
		switch ev.Event {
		case ledger.RunClaimed, ledger.RunCompleted:
			kinds[ev.Event] = true
			if ev.PayloadHash != want || ev.Autonomy != "L2" {
				t.Errorf("%s: payload_hash %q autonomy %q; want %q L2", ev.Event, ev.PayloadHash, ev.Autonomy, want)
			}
		case ledger.ScheduleCreated:
			var ch ScheduleChange
			if err := json.Unmarshal(ev.Detail, &ch); err != nil || ch.File != "schedules/s.yaml" {
				t.Errorf("schedule.created detail %s: %v", ev.Detail, err)
			}
		}
	}
	if len(kinds) != 2 {
		t.Fatalf("run events seen: %v", kinds)
	}
}

// reload replaces the schedules, as a merged pull request would.
func (e *env) reload(schedules string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, "schedules", "s.yaml"), []byte(schedules), 0o644); err != nil {
		e.t.Fatal(err)
	}
	cfg, diags, err := config.Load(e.dir)
	if err != nil || diags.Errors() > 0 {
		e.t.Fatalf("config: %v %v", err, diags)
	}
	e.cfg = cfg
}
