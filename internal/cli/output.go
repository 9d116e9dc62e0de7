package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/buildinfo"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/telemetry"
	"github.com/astra-gitops/astra/internal/ui"
)

// finishRun prints a run's report and maps its outcome to an exit code.
func (a *app) finishRun(rep *runner.Report, err error) error {
	_ = a.status.SetStatus("") // the run's progress, if it was interrupted
	if rep != nil {
		if a.json() {
			if perr := a.printJSON(rep); perr != nil {
				return perr
			}
		} else {
			report.Terminal(a.stdout, rep, a.verbose(), a.paint())
		}
		if a.inGitHubActions() {
			report.Annotations(a.stdout, rep)
			if werr := a.writeActionsFiles(rep); werr != nil {
				fmt.Fprintf(a.stderr, "astra: writing the job summary: %v\n", werr)
			}
		}
	}
	if rep != nil && !rep.DryRun {
		a.exportMetrics(rep)
	}
	if err == nil && rep != nil && rep.Failed() {
		return errkind.Failed()
	}
	return err
}

// exportMetrics sends the run's metrics over OTLP when the environment
// configures an exporter (telemetry.ExportMetrics), once, as the run ends:
// its tasks by outcome, duration and spend, and the approvals and dead
// letters the ledger holds after it. A failed export is a warning.
func (a *app) exportMetrics(rep *runner.Report) {
	if !telemetry.MetricsOn(a.getenv) {
		return
	}
	run := telemetry.Run{Command: rep.Command}
	for _, o := range rep.Outcomes {
		run.Tasks = append(run.Tasks, telemetry.Task{Schedule: o.ScheduleID, Tool: o.Tool, Outcome: o.Action,
			Duration: time.Duration(o.Usage.WallClockMS) * time.Millisecond, SpendUSD: o.Usage.Cost.Float()})
	}
	if st, _, err := state.Replay(a.store(), rep.Now); err == nil && a.cfg != nil {
		s := introspect.StatusOf(a.cfg, st)
		run.ApprovalsPending, run.DeadLetters = s.Approvals, s.DeadLetters
	}
	if err := telemetry.ExportMetrics(context.Background(), telemetry.Options{Getenv: a.getenv, Redact: a.redactor().String, Version: buildinfo.Version()}, run); err != nil {
		fmt.Fprintf(a.stderr, "astra: warning: %v\n", err) // metrics never fail a run
	}
}

// finishRecord reports where a recorded decision went and maps errors.
func (a *app) finishRecord(rep *runner.Report, err error) error {
	if err != nil {
		return err
	}
	for _, l := range report.LedgerStatus(rep) {
		fmt.Fprintln(a.stdout, l)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(a.stdout, "warning: %s\n", w)
	}
	return nil
}

// writeActionsFiles appends the job summary to $GITHUB_STEP_SUMMARY and the
// run's counts to $GITHUB_OUTPUT (the composite action's outputs).
func (a *app) writeActionsFiles(rep *runner.Report) error {
	err := ui.WriteOutputs(a.getenv("GITHUB_OUTPUT"),
		ui.Output{Name: "ran", Value: strconv.Itoa(rep.Count(runner.ActionRan))},
		ui.Output{Name: "failed", Value: strconv.Itoa(rep.Count(runner.ActionFailed) + rep.Count(runner.ActionLost))},
		ui.Output{Name: "skipped", Value: strconv.Itoa(rep.Count(runner.ActionSkipped) + rep.Count(runner.ActionMissed))},
		ui.Output{Name: "awaiting_approval", Value: strconv.Itoa(rep.Count(runner.ActionAwaitingApproval))})
	if err != nil {
		return err
	}
	p := a.getenv("GITHUB_STEP_SUMMARY")
	if p == "" || a.cfg == nil {
		return nil
	}
	st, _, err := state.Replay(a.store(), rep.Now)
	if err != nil {
		return err
	}
	var b strings.Builder
	report.Summary(&b, rep, a.cfg, introspect.BudgetReport(a.cfg, st))
	return ui.AppendSummary(p, b.String()+"\n")
}

// paint colours run actions when stdout is a terminal and NO_COLOR is not
// set (https://no-color.org); otherwise it returns the text unchanged.
func (a *app) paint() report.Paint {
	if a.getenv("NO_COLOR") != "" || a.json() || !a.tty {
		return report.Plain
	}
	return report.ANSI
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (a *app) printTasks(ts []introspect.Task) error {
	// A TENANT column only where tenants exist.
	tenants := slices.ContainsFunc(ts, func(t introspect.Task) bool { return t.Tenant != "" })
	header := "STARTED\tSTATUS\tRUN\tTOOL\tTIER\tUSAGE\tDETAIL"
	if tenants {
		header = "STARTED\tSTATUS\tRUN\tTENANT\tTOOL\tTIER\tUSAGE\tDETAIL"
	}
	return printRows(a, ts, "no tasks", header, func(t introspect.Task) string {
		detail := t.Reason
		if t.Error != "" {
			detail = strings.TrimSpace(detail + " " + t.Error)
		}
		if t.Approval != "" {
			detail = strings.TrimSpace(detail + " (" + oneLine(t.Approval) + ")")
		}
		if a.verbose() && t.Output != "" {
			detail += " | " + strings.ReplaceAll(strings.TrimSpace(t.Output), "\n", " / ")
		}
		usage := ""
		if !t.Usage.IsZero() {
			usage = fmt.Sprintf("%dtok %s %dms", t.Usage.Tokens, t.Usage.Cost.Dollars(), t.Usage.WallClockMS)
		}
		run := t.RunID
		if tenants {
			run += "\t" + cmp.Or(t.Tenant, "-")
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s", t.Started.Format(time.RFC3339), t.Status, run, t.Tool, t.Tier, usage, truncate(detail, 120))
	})
}

// truncate shortens s to n characters, the last an ellipsis; it never
// cuts a character in two, nor an escape sequence (it is cleaned first).
func truncate(s string, n int) string {
	s = ui.Clean(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, kept := 0, 0
	for kept < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		kept++
	}
	return s[:i] + "…"
}

// count is "1 error", "2 errors": a number and its noun, in the right number.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
