package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/astra-gitops/astra/internal/runner"
)

// budgetOptions are `astra budget`'s: it has no flags of its own.
type budgetOptions struct{}

func (a *app) budgetCmd() *cobra.Command {
	var o budgetOptions
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show per-schedule run budgets and global spend against the limits",
		Long: `budget shows, for today (UTC), each tier-1+ schedule's per-day run budget
(per_day, consumed, left, last_reset) and the global spend of the day and
the month against the limits in policies, with the alert
level reached and any pause.

` + model.TierZeroRule,
		Example: `  astra budget
  astra budget --json
  astra budget resume    # lift a global-budget pause (recorded)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBudget(cmd.Context(), o) },
	}
	cmd.AddCommand(a.budgetResumeCmd())
	return a.limitFlag(cmd)
}

// runBudget is `astra budget`.
func (a *app) runBudget(_ context.Context, _ budgetOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	st, err := a.replay()
	if err != nil {
		return err
	}
	b := introspect.BudgetReport(cfg, st)
	b.Schedules = firstN(b.Schedules, a.limit)
	if a.json() {
		return a.printJSON(b)
	}
	return printBudget(a.stdout, b)
}

// printBudget is the budget report for people: the global spend, then
// the per-day run budgets.
func printBudget(w io.Writer, b introspect.Budget) error {
	g := b.Global
	fmt.Fprintf(w, "Global spend (%s UTC), on limit: %s\n", b.Day, g.OnLimitReached)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PERIOD\tSPENT\tHELD\tLEFT\tLIMIT\tUSE\tTOKENS\tSTATE")
	for _, p := range []introspect.Period{g.Day, g.Month} {
		limit, left, state := p.Limit.Dollars(), p.Left().Dollars(), "open"
		if p.Limit == 0 {
			limit, left = "none", "-"
		}
		switch {
		case p.Paused != "":
			state = "PAUSED " + p.Paused
		case p.Ceiling > 0:
			state = "resumed: up to " + p.Ceiling.Dollars() + " for the rest of this " + p.Name
		case !p.ResumedUntil.IsZero():
			state = "resumed: not limited until " + p.ResumedUntil.Format(time.RFC3339)
		case p.Resumed:
			state = "resumed: not limited for the rest of this " + p.Name
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Spent.Dollars(), p.Reserved.Dollars(), left, limit,
			report.Bar(p.Spent, p.Limit, 20), p.Tokens, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  (HELD: the cost caps of open claims, every runner's and plan's; a run is claimed only if its cap fits in LEFT)")
	if g.AlertLevel > 0 {
		fmt.Fprintf(w, "  alert level reached: %.0f%%\n", g.AlertLevel*100)
	}
	if paused := g.Paused(); paused != "" {
		fmt.Fprintf(w, "  PAUSED: %s; `astra budget resume` lifts it\n", paused)
	}
	fmt.Fprintln(w, "\nPer-day run budgets (tier 1 and 2):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SCHEDULE\tTIER\tPER DAY\tCONSUMED\tLEFT")
	for _, s := range b.Schedules {
		if s.PerDay == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\n", s.Name, s.Tier, s.PerDay, s.Consumed, s.Left)
	}
	return tw.Flush()
}

// budgetResumeOptions are `astra budget resume`'s flags.
type budgetResumeOptions struct {
	extra, until, reason string
	by                   string
	run                  runFlags
}

func (a *app) budgetResumeCmd() *cobra.Command {
	var o budgetResumeOptions
	cmd := &cobra.Command{
		Use:   "resume (--extra AMOUNT | --until TIME) --reason TEXT",
		Short: "Lift a global-budget pause to a new bound (recorded with who and why)",
		Long: `resume lifts the pause of the day, the month, or both, to a bound it
records with who resumed and why:

  --extra AMOUNT   the period may spend AMOUNT dollars more than it has
                   spent: that sum is its ceiling for the rest of the period
                   (admission and the pause hold at it);
  --until TIME     no limit until TIME (RFC3339, such as
                   2026-11-23T00:00:00Z or 2026-11-23T00:00Z), and at most
                   to the end of the period; from TIME the policy's limit
                   holds again.

One of them is needed: a resume without a bound is refused. The next
period starts under the policy's limits whatever the bound.`,
		Example: `  astra budget            # see whether spend paused runs
  astra budget resume --extra 2.00 --reason "release day: the nightly batch must finish"
  astra budget resume --until 2026-11-23T00:00Z --reason "incident 12: the rebuild needs the rest of today"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBudgetResume(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.extra, "extra", "", "spend this many dollars more than the period has spent, for the rest of it")
	f.StringVar(&o.until, "until", "", "no limit until this time (RFC3339), at most to the end of the period")
	f.StringVar(&o.reason, "reason", "", "why: recorded with who resumed")
	byFlag(cmd, &o.by)
	f.BoolVar(&o.run.noPush, "no-push", false, "commit locally, do not push")
	return cmd
}

// runBudgetResume is `astra budget resume`.
func (a *app) runBudgetResume(ctx context.Context, o budgetResumeOptions) error {
	b := runner.ResumeBound{Extra: o.extra, Reason: o.reason}
	if o.until != "" {
		t, err := parseUntil(o.until)
		if err != nil {
			return err
		}
		b.Until = t
	}
	r, id, err := a.recorder(ctx, o.run, model.VerbResume, "the global budget", o.by)
	if err != nil {
		return err
	}
	rep, lifted, err := r.Resume(ctx, id, b)
	for _, l := range lifted {
		if l.Ceiling > 0 {
			fmt.Fprintf(a.stdout, "resumed: the %s may spend up to %s for the rest of it; the policy's limit holds again from the next\n", l.Period, l.Ceiling.Dollars())
		} else {
			fmt.Fprintf(a.stdout, "resumed: the %s is not limited until %s (at most to its end); then the policy's limit holds again\n", l.Period, l.Until.Format(time.RFC3339))
		}
	}
	return a.finishRecord(rep, err)
}

// parseUntil reads --until: RFC3339, seconds optional.
func parseUntil(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errkind.Usagef("--until %q is not an RFC3339 time such as 2026-11-23T00:00:00Z", s)
}
