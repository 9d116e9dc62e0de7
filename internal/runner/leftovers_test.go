package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
)

const hourlyA = `schedules:
  - {id: a, name: a, cron: "0 * * * *", target_tool: work, per_day_budget: 100}
`

func noPush(o *Options) { o.NoPush = true }

func warned(rep *Report, text string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w, text) {
			return true
		}
	}
	return false
}

// A --no-push run keeps its commit local and says how many; the next run
// pushes it first, even when nothing is due.
func TestNoPushThenPush(t *testing.T) {
	e := newEnv(t, hourlyA)
	e.runDue("2026-11-22T08:00:00Z")
	rep := e.runDue("2026-11-22T09:00:30Z", noPush)
	if rep.Pushed || rep.UnpushedCommits != 2 || e.count(ledger.RunCompleted, "a") != 0 {
		t.Fatalf("pushed %v, %d unpushed, %d completions on the remote", rep.Pushed, rep.UnpushedCommits, e.count(ledger.RunCompleted, "a"))
	}
	rep = e.runDue("2026-11-22T09:01:00Z")
	if len(rep.Outcomes) != 0 || !warned(rep, "pushed 2 commits that an earlier run committed and did not push") {
		t.Fatalf("outcomes %d, warnings %q", len(rep.Outcomes), rep.Warnings)
	}
	if e.count(ledger.RunCompleted, "a") != 1 || e.git.unpushed != 0 {
		t.Fatalf("%d completions on the remote, %d unpushed", e.count(ledger.RunCompleted, "a"), e.git.unpushed)
	}
}

// Local commits and a remote that moved on: they are replayed on top of
// the remote ledger, never dropped by the sync (which moves the branch to
// the remote's), and nothing is doubled (the run's claim, outcome and tick).
func TestLeftoversReplayedOnMovedRemote(t *testing.T) {
	e := newEnv(t, hourlyA)
	e.runDue("2026-11-22T08:00:00Z")
	e.runDue("2026-11-22T09:00:30Z", noPush)
	other := e.clone()
	other.runDue("2026-11-22T10:00:30Z")
	rep := e.runDue("2026-11-22T11:00:30Z")
	if !warned(rep, "an earlier run left 3 events unpushed: 3 added on top of the remote ledger") {
		t.Fatalf("warnings %q", rep.Warnings)
	}
	for _, slot := range []string{"09", "10", "11"} {
		n := 0
		for _, ev := range e.events() {
			if ev.Event == ledger.RunCompleted && ev.IdempotencyKey == "a@2026-11-22T"+slot+":00:00Z" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("slot %s: %d completions on the remote, want 1", slot, n)
		}
	}
}

// A claim committed but never pushed (the push failed) owned nothing: the
// next run drops it and runs the slot, instead of waiting for its deadline
// and retrying it.
func TestOrphanClaimDropped(t *testing.T) {
	e := newEnv(t, hourlyA)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.pushErrs = []error{errors.New("connection reset")}
	if _, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("claim push failure: %v", err)
	}
	if e.git.unpushed != 1 {
		t.Fatalf("%d unpushed commits, want the claim's", e.git.unpushed)
	}
	rep := e.runDue("2026-11-22T09:01:00Z")
	if o := outcome(t, rep, "a"); o.Action != ActionRan || !warned(rep, "1 claim never pushed (so nothing ran under them) dropped") {
		t.Fatalf("a: %s; warnings %q", o.Action, rep.Warnings)
	}
	if e.count(ledger.RunClaimed, "a") != 1 || e.count(ledger.RunCompleted, "a") != 1 || e.exec.runs("a") != 1 {
		t.Fatalf("%d claims, %d completions, %d runs", e.count(ledger.RunClaimed, "a"), e.count(ledger.RunCompleted, "a"), e.exec.runs("a"))
	}
}

// Events appended and not committed (the commit failed, or the run was
// killed before it) are committed and pushed by the next run.
func TestUncommittedAppendsCommitted(t *testing.T) {
	e := newEnv(t, hourlyA)
	e.runDue("2026-11-22T08:00:00Z")
	e.git.commitErr = errors.New("index.lock: another astra or git process is using this checkout")
	rep, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("commit failure: %v", err)
	}
	if o := outcome(t, rep, "a"); o.Reason != reasonNotClaimed || strings.Contains(o.Detail, "other runners") ||
		!strings.Contains(o.Detail, "another astra or git process is using this checkout") {
		t.Fatalf("a: %s %s", o.Reason, o.Detail)
	}
	e.git.commitErr = nil
	rep = e.runDue("2026-11-22T09:01:00Z")
	if !warned(rep, "committed var/schedules/2026-11.ndjson.gz: an earlier run appended to it") || !warned(rep, "1 claim never pushed (so nothing ran under them) dropped") {
		t.Fatalf("warnings %q", rep.Warnings)
	}
	if o := outcome(t, rep, "a"); o.Action != ActionRan {
		t.Fatalf("a: %s %s", o.Action, o.Detail)
	}
	if e.count(ledger.RunClaimed, "a") != 1 || e.count(ledger.RunCompleted, "a") != 1 {
		t.Fatalf("%d claims, %d completions", e.count(ledger.RunClaimed, "a"), e.count(ledger.RunCompleted, "a"))
	}
}

// A spill another runner merged, while this runner still holds the commit
// it spilled: the commit's events are not added a second time.
func TestSpillMergedElsewhereNotDoubled(t *testing.T) {
	e := newEnv(t, hourlyA)
	e.runDue("2026-11-22T08:00:00Z")
	e.remote.beforePush = func(n int) {
		if n >= 3 { // every outcome push
			e.remote.advance()
		}
	}
	if _, err := e.runner("2026-11-22T09:00:30Z").RunDue(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("want a spill, got %v", err)
	}
	e.remote.beforePush = nil
	other := e.clone()
	if rep := other.runDue("2026-11-22T09:05:00Z"); rep.Merged == 0 || len(e.remote.spills) != 0 {
		t.Fatalf("the other runner merged %d events, %d spills left", rep.Merged, len(e.remote.spills))
	}
	e.runDue("2026-11-22T09:10:00Z")
	if n := e.count(ledger.RunCompleted, "a"); n != 1 {
		t.Fatalf("%d completions of a, want 1", n)
	}
}
