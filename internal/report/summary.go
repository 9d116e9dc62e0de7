package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/runner"
)

// Summary writes the Markdown job summary of a run (GitHub Actions
// $GITHUB_STEP_SUMMARY): what ran, what was skipped and why, what waits
// for approval, budget use against the limits, and the next runs.
func Summary(w io.Writer, rep *runner.Report, cfg *model.Config, b introspect.Budget) {
	title := "astra " + rep.Command
	if rep.DryRun {
		title += " (dry run)"
	}
	fmt.Fprintf(w, "## %s at %s\n\n", title, rep.Now.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "**%d ran**, %d failed, %d skipped, %d awaiting approval", rep.Count(runner.ActionRan),
		rep.Count(runner.ActionFailed)+rep.Count(runner.ActionLost), rep.Count(runner.ActionSkipped)+rep.Count(runner.ActionMissed),
		rep.Count(runner.ActionAwaitingApproval))
	if n := rep.Count(runner.ActionDryRun) + rep.Count(runner.ActionWouldRun); n > 0 {
		fmt.Fprintf(w, ", %d would run", n)
	}
	w.Write([]byte("\n\n"))
	summaryOutcomes(w, rep)
	if rep.OverLimit > 0 {
		fmt.Fprintf(w, "%d more were due beyond `--limit`; the next run takes them.\n\n", rep.OverLimit)
	}
	for _, n := range rep.Approvals {
		fmt.Fprintf(w, "- Approval of %s: **%s** %s\n", code(n.Name), strings.TrimPrefix(n.Event, "approval."), n.Detail)
	}
	if len(rep.Approvals) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range rep.InfraErrors {
		fmt.Fprintf(w, "> [!CAUTION]\n> %s\n\n", m)
	}
	for _, m := range rep.Warnings {
		fmt.Fprintf(w, "> [!WARNING]\n> %s\n\n", m)
	}
	summaryBudget(w, rep, b)
	summaryNextRuns(w, rep.Now, cfg)
	if st := LedgerStatus(rep); len(st) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(st, ".\n\n"))
	}
}

// summaryOutcomes is the table of outcomes, one row each.
func summaryOutcomes(w io.Writer, rep *runner.Report) {
	if len(rep.Outcomes) == 0 {
		fmt.Fprintln(w, "Nothing was due.")
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintln(w, "| | schedule | slot | tool | tier | details |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, o := range rep.Outcomes {
		details := o.Reason
		if o.Detail != "" {
			details = strings.TrimPrefix(details+": "+o.Detail, ": ")
		}
		if o.PRURL != "" {
			details += fmt.Sprintf(" [PR #%d](%s)", o.PR, o.PRURL)
		}
		if !o.Usage.IsZero() {
			details += fmt.Sprintf(" (%d tokens, %s, %s)", o.Usage.Tokens, o.Usage.Cost.Dollars(), time.Duration(o.Usage.WallClockMS)*time.Millisecond)
		}
		slot := ""
		if !o.Slot.IsZero() {
			slot = o.Slot.UTC().Format("01-02 15:04")
		}
		fmt.Fprintf(w, "| %s %s | %s | %s | %s | %d | %s |\n", icon(o.Action), o.Action, code(o.Name), slot, code(o.Tool), o.Tier, cell(details))
	}
	w.Write([]byte("\n"))
}

// summaryBudget is spend against the day's and the month's limits, what
// pauses or alerts them, and the per-day run budgets used today.
func summaryBudget(w io.Writer, rep *runner.Report, b introspect.Budget) {
	g := b.Global
	fmt.Fprintln(w, "### Budget")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| period | spent | held by running runs | limit | use |\n|---|---|---|---|---|\n")
	for _, p := range []struct {
		name string
		introspect.Period
	}{{"today", g.Day}, {rep.Now.UTC().Format("January"), g.Month}} {
		fmt.Fprintf(w, "| %s | %s | %s | %s | `%s` |\n", p.name, p.Spent.Dollars(), p.Reserved.Dollars(), p.Limit.Dollars(), Bar(p.Spent, p.Limit, 20))
	}
	if paused := g.Paused(); paused != "" {
		fmt.Fprintf(w, "\n> [!WARNING]\n> Paused: %s. `astra budget resume` lifts it.\n", paused)
	}
	for _, a := range rep.Alerts {
		fmt.Fprintf(w, "\n> [!NOTE]\n> %s\n", a)
	}
	var limited []string
	for _, s := range b.Schedules {
		if s.PerDay > 0 && s.Consumed > 0 {
			limited = append(limited, fmt.Sprintf("%s %d/%d", code(s.Name), s.Consumed, s.PerDay))
		}
	}
	if len(limited) > 0 {
		fmt.Fprintf(w, "\nPer-day run budgets used today: %s\n", strings.Join(limited, ", "))
	}
}

// summaryNextRuns lists the next eight slots of enabled timed schedules
// after now, soonest first.
func summaryNextRuns(w io.Writer, now time.Time, cfg *model.Config) {
	type next struct {
		name string
		at   time.Time
	}
	var nexts []next
	for _, sc := range cfg.Schedules {
		if sc.Spec != nil && sc.Enabled {
			nexts = append(nexts, next{sc.Name, sc.Spec.Next(now)})
		}
	}
	sort.Slice(nexts, func(i, j int) bool { return nexts[i].at.Before(nexts[j].at) })
	if len(nexts) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### Next runs")
	fmt.Fprintln(w)
	for _, n := range nexts[:min(len(nexts), 8)] {
		fmt.Fprintf(w, "- %s at %s\n", code(n.name), n.at.UTC().Format("2006-01-02 15:04 UTC"))
	}
}

// Bar draws spent against limit in text, for Markdown and terminals.
func Bar(spent, limit money.USD, width int) string {
	if limit <= 0 {
		return "no limit"
	}
	f := spent.Float() / limit.Float()
	n := min(max(int(f*float64(width)+0.5), 0), width)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n) + fmt.Sprintf(" %3.0f%%", f*100)
}

func icon(action string) string {
	switch action {
	case runner.ActionRan:
		return "✅"
	case runner.ActionFailed, runner.ActionLost:
		return "❌"
	case runner.ActionAwaitingApproval:
		return "⏳"
	case runner.ActionDryRun, runner.ActionWouldRun:
		return "🔎"
	}
	return "⏭️"
}

// cell keeps a value inside one Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", "").Replace(s)
}

// code shows a name as inline code inside a table cell: a backtick in the
// name would end the code span, a pipe the cell.
func code(s string) string {
	return "`" + cell(strings.ReplaceAll(s, "`", "'")) + "`"
}
