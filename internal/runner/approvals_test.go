package runner

import (
	"testing"

	"github.com/astra-gitops/astra/internal/ledger"
)

const shipDaily = `schedules:
  - {id: s, name: s, cron: "0 9 * * *", target_tool: ship}
`

// A merge by an approver approves one run: the next run executes it once
// and records the approval consumed; later runs do not run it again.
func TestMergedByApproverRunsOnce(t *testing.T) {
	e := newEnv(t, shipDaily)
	e.forge.approvers["octocat"] = true
	e.runDue("2026-11-22T08:00:00Z")
	rep := e.runDue("2026-11-22T09:00:30Z")
	if o := outcome(t, rep, "s"); o.Action != ActionAwaitingApproval || o.PR != 1 {
		t.Fatalf("s: %s PR %d", o.Action, o.PR)
	}
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	rep = e.runDue("2026-11-22T09:10:00Z")
	if o := outcome(t, rep, "s"); o.Action != ActionRan {
		t.Fatalf("after the merge: %s %s", o.Action, o.Detail)
	}
	e.runDue("2026-11-22T09:20:00Z")
	if e.exec.runs("s") != 1 || e.count(ledger.ApprovalConsumed, "s") != 1 {
		t.Fatalf("ran %d times, consumed %d", e.exec.runs("s"), e.count(ledger.ApprovalConsumed, "s"))
	}
}
