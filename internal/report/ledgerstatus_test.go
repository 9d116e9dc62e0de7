package report

import (
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/runner"
)

// Each state a run can leave its ledger in is told as it is: never
// "pushed" for a commit the remote does not have.
func TestLedgerStatus(t *testing.T) {
	const local, claims = "1111111111111111", "2222222222222222"
	for _, tc := range []struct {
		name string
		rep  runner.Report
		want string
	}{
		{"dry run", runner.Report{DryRun: true, Interrupted: true}, ""},
		{"nothing recorded", runner.Report{}, ""},
		{"pushed", runner.Report{Commit: local, Pushed: true, PushedCommit: local},
			"ledger committed 111111111111 and pushed"},
		{"not pushed by choice", runner.Report{Commit: local},
			"ledger committed 111111111111 (not pushed)"},
		{"push failed", runner.Report{Commit: local, Unpushed: 1},
			"ledger committed 111111111111, not pushed: 1 event in this checkout only"},
		{"spilled", runner.Report{Commit: local, Unpushed: 3, Spilled: "astra/spill/r-1"},
			"ledger committed 111111111111, not pushed: 3 events saved on branch astra/spill/r-1, which the next run adds"},
		{"interrupted after the claims", runner.Report{Commit: local, PushedCommit: claims, Unpushed: 2, Interrupted: true},
			"ledger committed 111111111111, not pushed: the remote has this run's commit 222222222222, but not the 2 events after it (in this checkout only)\n" +
				"interrupted after the claims were pushed: a run from this checkout continues from 111111111111; a run from any other checkout " +
				"(a new CI job) cannot see these outcomes: it reports each claimed run lost once its claim's deadline has passed, then retries it as its policy says"},
		{"interrupted before any push", runner.Report{Commit: local, Unpushed: 2, Interrupted: true},
			"ledger committed 111111111111, not pushed: 2 events in this checkout only\n" +
				"interrupted before anything was pushed: no claim reached the remote, so other runs decide these slots afresh; a run from this checkout continues from 111111111111"},
		{"interrupted before any commit", runner.Report{Interrupted: true}, "interrupted before anything was committed"},
		{"interrupted after the last push", runner.Report{Commit: local, Pushed: true, PushedCommit: local, Interrupted: true},
			"ledger committed 111111111111 and pushed\ninterrupted; nothing recorded is lost"},
	} {
		if got := strings.Join(LedgerStatus(&tc.rep), "\n"); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
