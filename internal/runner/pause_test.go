package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
)

const hourly = `schedules:
  - {id: h, name: h, cron: "0 * * * *", target_tool: work, retry: {max_attempts: 3, backoff_base: 5s, backoff_max: 5s}}
`

// enable sets whether h is enabled, as an edit of its file would.
func (e *env) enable(on bool) { e.cfg.Schedule("h").Enabled = on }

// A disabled schedule's slots are not due later: while it is disabled
// nothing of it runs or is recorded slot by slot; enabled again, the
// slots that fell in the pause are recorded once, as one skip (reason
// disabled) with their count, and the schedule resumes at its next slot.
func TestDisabledSlotsAreNotDueLater(t *testing.T) {
	e := newEnv(t, hourly)
	e.runDue("2026-11-22T00:00:30Z")
	e.runDue("2026-11-22T01:00:30Z")
	e.enable(false)
	e.runDue("2026-11-22T02:00:30Z")
	e.runDue("2026-11-22T05:00:30Z")
	if n := e.exec.runs("h"); n != 1 {
		t.Fatalf("ran %d times, want 1 (before the pause)", n)
	}
	e.enable(true)
	rep := e.runDue("2026-11-22T07:20:00Z")
	if o := outcome(t, rep, "h"); o.Action != ActionSkipped || o.Reason != ledger.ReasonDisabled ||
		!strings.Contains(o.Detail, "6 slot(s) from 2026-11-22T02:00:00Z to 2026-11-22T07:00:00Z fell while the schedule was disabled") {
		t.Fatalf("h when enabled again: %+v", o)
	}
	if n := e.exec.runs("h"); n != 1 {
		t.Fatalf("a slot of the pause ran (%d runs)", n)
	}
	e.runDue("2026-11-22T07:40:00Z")
	e.runDue("2026-11-22T08:00:30Z")
	if n := e.exec.runs("h"); n != 2 {
		t.Fatalf("ran %d times, want 2 (the next slot after the pause)", n)
	}
	var skips []ledger.Event
	statuses := []string{}
	for _, ev := range e.events() {
		switch {
		case ev.Event == ledger.RunSkipped && ev.Reason == ledger.ReasonDisabled:
			skips = append(skips, ev)
		case ev.Event == ledger.ScheduleUpdated:
			statuses = append(statuses, ev.Status)
		}
	}
	if len(skips) != 1 || skips[0].IdempotencyKey != "h@2026-11-22T07:00:00Z" {
		t.Fatalf("pause recorded as %+v", skips)
	}
	var d PauseDetail
	if err := json.Unmarshal(skips[0].Detail, &d); err != nil || d.Count != 6 || d.Since.Format("15:04:05") != "02:00:30" {
		t.Fatalf("pause detail %s: %v", skips[0].Detail, err)
	}
	if strings.Join(statuses, ",") != "disabled,ok" {
		t.Fatalf("schedule.updated statuses %v", statuses)
	}
}

// A retry of a disabled schedule waits: it does not run while the
// schedule is disabled (nor is it dead-lettered as late), and runs once
// the schedule is enabled again within its catch-up window.
func TestDisabledRetriesWait(t *testing.T) {
	e := newEnv(t, hourly)
	fail := true
	e.exec.result = func(req executor.Request) executor.Result {
		if fail {
			return executor.Result{Status: executor.StatusFailed, Error: "exit status 1"}
		}
		return executor.Result{Status: executor.StatusOK}
	}
	e.runDue("2026-11-22T00:00:30Z")
	e.runDue("2026-11-22T01:00:30Z") // fails: a retry after 5s
	fail = false
	e.enable(false)
	rep := e.runDue("2026-11-22T01:10:00Z")
	if e.exec.runs("h") != 1 || len(rep.Outcomes) != 0 {
		t.Fatalf("a disabled schedule's retry ran: %d runs, %+v", e.exec.runs("h"), rep.Outcomes)
	}
	e.enable(true)
	rep = e.runDue("2026-11-22T01:20:00Z")
	if e.exec.runs("h") != 2 || e.count(ledger.RunCompleted, "h") != 1 {
		t.Fatalf("the retry did not run once enabled: %d runs, %+v", e.exec.runs("h"), rep.Outcomes)
	}
}

// A run id names one execution: the attempt after a released dead letter
// is numbered after the ones before it, so no run id (or span id) repeats.
func TestReleasedAttemptsContinue(t *testing.T) {
	e := newEnv(t, hourly)
	e.exec.result = func(req executor.Request) executor.Result {
		return executor.Result{Status: executor.StatusFailed, Error: "exit status 1"}
	}
	e.runDue("2026-11-22T00:00:30Z")
	for _, at := range []string{"2026-11-22T01:00:30Z", "2026-11-22T01:01:00Z", "2026-11-22T01:02:00Z"} {
		e.runDue(at)
	}
	if e.count(ledger.RunDeadLettered, "h") != 1 {
		t.Fatalf("not dead-lettered after 3 attempts")
	}
	if _, _, err := e.runner("2026-11-22T01:30:00Z").ReleaseDeadLetters(context.Background(), "h", ownerIdentity()); err != nil {
		t.Fatal(err)
	}
	e.runDue("2026-11-22T01:31:00Z")
	seen := map[string]bool{}
	for _, r := range e.exec.ran {
		if r.ScheduleID == "h" && !r.DryRun {
			if seen[r.RunID] {
				t.Fatalf("run id %s repeats", r.RunID)
			}
			seen[r.RunID] = true
		}
	}
	if !seen["h@2026-11-22T01:00:00Z#4"] || len(seen) != 4 {
		t.Fatalf("run ids %v", seen)
	}
}
