package report

import (
	"fmt"

	"github.com/astra-gitops/astra/internal/runner"
)

// LedgerStatus says where what a run recorded went (committed, pushed,
// only in this checkout, or on a spill branch) and, when the run was
// interrupted, what happens to it next. It says nothing for a dry run.
func LedgerStatus(rep *runner.Report) []string {
	if rep.DryRun {
		return nil
	}
	var out []string
	c := Short(rep.Commit)
	switch {
	case rep.Commit == "":
	case rep.Pushed:
		out = append(out, fmt.Sprintf("ledger committed %s and pushed", c))
	case rep.Spilled != "":
		out = append(out, fmt.Sprintf("ledger committed %s, not pushed: %s saved on branch %s, which the next run adds",
			c, events(rep.Unpushed), rep.Spilled))
	case rep.UnpushedCommits > 0:
		out = append(out, fmt.Sprintf("ledger committed %s locally, not pushed (--no-push): %s the remote does not have; the next run that pushes sends them first",
			c, commits(rep.UnpushedCommits)))
	case rep.Unpushed > 0 && rep.PushedCommit != "":
		out = append(out, fmt.Sprintf("ledger committed %s, not pushed: the remote has this run's commit %s, but not the %s after it (in this checkout only)",
			c, Short(rep.PushedCommit), events(rep.Unpushed)))
	case rep.Unpushed > 0:
		out = append(out, fmt.Sprintf("ledger committed %s, not pushed: %s in this checkout only", c, events(rep.Unpushed)))
	default:
		out = append(out, fmt.Sprintf("ledger committed %s (not pushed)", c))
	}
	if !rep.Interrupted {
		return out
	}
	switch {
	case rep.Commit == "":
		out = append(out, "interrupted before anything was committed")
	case rep.Pushed || rep.Spilled != "":
		out = append(out, "interrupted; nothing recorded is lost")
	case rep.PushedCommit != "":
		out = append(out, fmt.Sprintf("interrupted after the claims were pushed: a run from this checkout continues from %s; "+
			"a run from any other checkout (a new CI job) cannot see these outcomes: it reports each claimed run lost once its claim's deadline "+
			"has passed, then retries it as its policy says", c))
	default:
		out = append(out, fmt.Sprintf("interrupted before anything was pushed: no claim reached the remote, so other runs decide these slots afresh; "+
			"a run from this checkout continues from %s", c))
	}
	return out
}

// commits counts commits in words.
func commits(n int) string {
	if n == 1 {
		return "1 commit"
	}
	return fmt.Sprintf("%d commits", n)
}

// events counts ledger events in words.
func events(n int) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}
