package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/ui"
)

// Annotations marks failures, approvals waiting, L2 notices and budget
// alerts in the GitHub Actions log (workflow commands).
func Annotations(w io.Writer, rep *runner.Report) {
	for _, o := range rep.Outcomes {
		switch o.Action {
		case runner.ActionFailed, runner.ActionLost:
			annotate(w, ui.Error, "astra: "+o.Name+" failed", fmt.Sprintf("%s (%s) %s", o.Key, o.Reason, o.Detail))
		case runner.ActionMissed:
			if o.DeadLettered { // a retry too late to run
				annotate(w, ui.Warning, "astra: "+o.Name+" dead-lettered", fmt.Sprintf("%s (%s) %s", o.Key, o.Reason, o.Detail))
			}
		case runner.ActionAwaitingApproval:
			annotate(w, ui.Notice, "astra: "+o.Name+" awaits approval", strings.TrimSpace(o.PRURL+" "+o.Detail))
		case runner.ActionRan:
			if o.Notify { // L2 ExecuteNotify
				annotate(w, ui.Notice, "astra: "+o.Name+" ran", o.Key+" "+strings.TrimSpace(o.Output))
			}
		}
	}
	for _, n := range rep.Approvals {
		annotate(w, ui.Notice, "astra: approval of "+n.Name, n.Event+": "+n.Detail)
	}
	for _, al := range rep.Alerts {
		annotate(w, ui.Warning, "astra budget", al)
	}
	for _, msg := range rep.Warnings {
		annotate(w, ui.Warning, "astra", msg)
	}
	for _, msg := range rep.InfraErrors {
		annotate(w, ui.Error, "astra: git or GitHub", msg)
	}
}

func annotate(w io.Writer, level ui.Level, title, msg string) {
	_ = ui.Annotate(w, ui.Annotation{Level: level, Title: title, Message: msg})
}

// DiagnosticAnnotations writes configuration problems as workflow
// commands, so that they show on their lines in a pull request's diff.
func DiagnosticAnnotations(w io.Writer, l diag.List) {
	for _, d := range l {
		level := ui.Error
		if d.Severity == diag.Warning {
			level = ui.Warning
		}
		msg := d.Msg
		if d.Hint != "" {
			msg += " (" + d.Hint + ")"
		}
		_ = ui.Annotate(w, ui.Annotation{Level: level, File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col, Message: msg})
	}
}
