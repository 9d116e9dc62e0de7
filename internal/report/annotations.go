package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/runner"
)

// Annotations marks failures, approvals waiting, L2 notices and budget
// alerts in the GitHub Actions log (workflow commands).
func Annotations(w io.Writer, rep *runner.Report) {
	for _, o := range rep.Outcomes {
		switch o.Action {
		case runner.ActionFailed, runner.ActionLost:
			annotate(w, "error", "astra: "+o.Name+" failed", fmt.Sprintf("%s (%s) %s", o.Key, o.Reason, o.Detail))
		case runner.ActionMissed:
			if o.DeadLettered { // a retry too late to run
				annotate(w, "warning", "astra: "+o.Name+" dead-lettered", fmt.Sprintf("%s (%s) %s", o.Key, o.Reason, o.Detail))
			}
		case runner.ActionAwaitingApproval:
			annotate(w, "notice", "astra: "+o.Name+" awaits approval", strings.TrimSpace(o.PRURL+" "+o.Detail))
		case runner.ActionRan:
			if o.Notify { // L2 ExecuteNotify
				annotate(w, "notice", "astra: "+o.Name+" ran", o.Key+" "+strings.TrimSpace(o.Output))
			}
		}
	}
	for _, n := range rep.Approvals {
		annotate(w, "notice", "astra: approval of "+n.Name, n.Event+": "+n.Detail)
	}
	for _, al := range rep.Alerts {
		annotate(w, "warning", "astra budget", al)
	}
	for _, msg := range rep.Warnings {
		annotate(w, "warning", "astra", msg)
	}
	for _, msg := range rep.InfraErrors {
		annotate(w, "error", "astra: git or GitHub", msg)
	}
}

// annotate writes one workflow command (::error title=...::message) with
// its title and message escaped.
func annotate(w io.Writer, level, title, msg string) {
	fmt.Fprintf(w, "::%s title=%s::%s\n", level, diag.EscapeProperty(title), diag.EscapeData(msg))
}
