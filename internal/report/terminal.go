package report

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/ui"
)

// Paint colours an outcome's action word; Plain leaves it as is.
type Paint func(action, text string) string

// Plain is the Paint of a non-terminal (or NO_COLOR).
func Plain(_, text string) string { return text }

// ANSI colours actions for terminals (through a ui.Writer that allows
// colour; any other writer keeps the text only).
func ANSI(action, text string) string {
	c := map[string]ui.Colour{
		runner.ActionRan: ui.Green, runner.ActionFailed: ui.Red, runner.ActionLost: ui.Red, runner.ActionAwaitingApproval: ui.Yellow,
		runner.ActionDryRun: ui.Cyan, runner.ActionWouldRun: ui.Cyan,
	}[action]
	if c == "" {
		c = ui.Dim // skipped, missed
	}
	return ui.Paint(c, text)
}

// Terminal writes the human report of a run: one line per outcome with
// why, then the counts and where the ledger went.
func Terminal(w io.Writer, rep *runner.Report, verbose bool, paint Paint) {
	mode := ""
	if rep.DryRun {
		mode = " (dry run: nothing was written)"
	}
	fmt.Fprintf(w, "astra %s at %s%s\n", rep.Command, rep.Now.Format(time.RFC3339), mode)
	if rep.Repaired != nil {
		fmt.Fprintf(w, "  repaired the ledger: cut %d bytes of %s, kept %d lines\n", rep.Repaired.Dropped, rep.Repaired.File, rep.Repaired.Salvaged)
	}
	terminalNewSchedules(w, rep)
	if len(rep.Outcomes) == 0 {
		fmt.Fprintln(w, "  nothing is due")
	}
	for _, o := range rep.Outcomes {
		terminalOutcome(w, o, verbose, paint)
	}
	for _, n := range rep.Approvals {
		pr := ""
		if n.PR != 0 {
			pr = fmt.Sprintf(" (pull request #%d)", n.PR)
		}
		fmt.Fprintf(w, "  approval of %s%s: %s: %s\n", n.Name, pr, strings.TrimPrefix(n.Event, "approval."), n.Detail)
	}
	if rep.OverLimit > 0 {
		fmt.Fprintf(w, "  %d more due beyond --limit: the next run takes them\n", rep.OverLimit)
	}
	for _, al := range rep.Alerts {
		fmt.Fprintf(w, "  budget: %s\n", al)
	}
	fmt.Fprintln(w, counts(rep))
	for _, l := range LedgerStatus(rep) {
		fmt.Fprintln(w, l)
	}
	for _, m := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	for _, e := range append(rep.Errors, rep.InfraErrors...) {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

// terminalNewSchedules lists the schedules a run saw first, with when
// each first runs.
func terminalNewSchedules(w io.Writer, rep *runner.Report) {
	n := len(rep.NewSchedules)
	if n == 0 {
		return
	}
	what := fmt.Sprintf("%d new schedules", n)
	if n == 1 {
		what = "1 new schedule"
	}
	note := ""
	if rep.DryRun {
		note = " (a dry run records nothing: the first real run records them)"
	}
	fmt.Fprintf(w, "  %s, first seen now: their slots before now are not due%s\n", what, note)
	width := 0
	for _, ns := range rep.NewSchedules {
		width = max(width, len(ns.Name))
	}
	for _, ns := range rep.NewSchedules {
		first := "first slot " + ns.Next.UTC().Format("2006-01-02 15:04Z")
		switch {
		case ns.RunNow:
			first = "runs now (run_immediately)"
		case ns.Next.IsZero():
			first = "no time slot (event-triggered, or its cron never fires)"
		}
		fmt.Fprintf(w, "    %-*s  %s\n", width, ns.Name, first)
	}
}

// terminalOutcome is one outcome's line with why, what a dry run would
// run, and its tool's output when verbose or a dry run.
func terminalOutcome(w io.Writer, o *runner.Outcome, verbose bool, paint Paint) {
	slot := ""
	if !o.Slot.IsZero() {
		slot = " @ " + o.Slot.UTC().Format("2006-01-02 15:04Z")
	}
	line := fmt.Sprintf("  %s %s%s  [%s, tier %d]", paint(o.Action, fmt.Sprintf("%-17s", o.Action)), o.Name, slot, o.Tool, o.Tier)
	if why := reasons(o); len(why) > 0 {
		line += ": " + strings.Join(why, "; ")
	}
	fmt.Fprintln(w, line)
	if o.WouldRun != "" {
		fmt.Fprintf(w, "      would run: %s\n", o.WouldRun)
	}
	if (verbose || o.Action == runner.ActionDryRun) && strings.TrimSpace(o.Output) != "" {
		for _, l := range strings.Split(strings.TrimRight(o.Output, "\n"), "\n") {
			fmt.Fprintf(w, "      | %s\n", l)
		}
	}
}

// reasons says why an outcome is what it is, in short clauses.
func reasons(o *runner.Outcome) []string {
	var why []string
	switch {
	case o.Reason != "" && o.Detail != "":
		why = append(why, o.Reason+": "+o.Detail)
	case o.Reason != "" || o.Detail != "":
		why = append(why, o.Reason+o.Detail)
	}
	switch {
	case o.PRURL != "":
		why = append(why, o.PRURL)
	case o.PR != 0:
		why = append(why, fmt.Sprintf("PR #%d", o.PR))
	case o.Action == runner.ActionAwaitingApproval:
		why = append(why, "approve with `astra approve "+cmp.Or(o.Ref, o.Name)+"`")
	}
	return append(why, whatNext(o)...)
}

// whatNext says what follows an outcome: a retry, the dead-letter queue,
// slots its catch-up policy left out, a chained step.
func whatNext(o *runner.Outcome) []string {
	var why []string
	if !o.RetryAt.IsZero() {
		why = append(why, "retry at "+o.RetryAt.UTC().Format(time.RFC3339))
	}
	if o.DeadLettered {
		why = append(why, "dead-lettered (astra dead-letter list)")
	}
	switch {
	case o.MissedMore:
		why = append(why, fmt.Sprintf("more than %d older missed slots not run (catch-up policy; counted over the last 5 years)", o.Missed))
	case o.Missed > 0:
		why = append(why, fmt.Sprintf("%d older missed slot(s) not run (catch-up policy)", o.Missed))
	}
	if o.Chain != "" {
		why = append(why, "then "+o.Chain)
	}
	return why
}

// counts is the one-line tally of a run.
func counts(rep *runner.Report) string {
	s := fmt.Sprintf("%d ran, %d failed, %d skipped, %d awaiting approval",
		rep.Count(runner.ActionRan), rep.Count(runner.ActionFailed)+rep.Count(runner.ActionLost),
		rep.Count(runner.ActionSkipped)+rep.Count(runner.ActionMissed), rep.Count(runner.ActionAwaitingApproval))
	if n := rep.Count(runner.ActionDryRun) + rep.Count(runner.ActionWouldRun); n > 0 {
		s += fmt.Sprintf(", %d would run", n)
	}
	return s
}

// Short abbreviates a commit hash.
func Short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
