package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/report"
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
	return cmd
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
		case p.Resumed:
			state = "resumed: not limited for the rest of this " + p.Name
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Spent.Dollars(), p.Reserved.Dollars(), left, limit,
			report.Bar(p.Spent, p.Limit, 20), p.Tokens, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  (HELD: the cost caps of runs that started and have no outcome yet; a run starts only if its cap fits in LEFT)")
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
	by  string
	run runFlags
}

func (a *app) budgetResumeCmd() *cobra.Command {
	var o budgetResumeOptions
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Lift a global-budget pause for the rest of its period (recorded)",
		Example: `  astra budget            # see whether spend paused runs
  astra budget resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBudgetResume(cmd.Context(), o) },
	}
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "commit locally, do not push")
	return cmd
}

// runBudgetResume is `astra budget resume`.
func (a *app) runBudgetResume(ctx context.Context, o budgetResumeOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbResume, "the global budget", o.by, o.run)
	if err != nil {
		return err
	}
	rep, periods, err := r.Resume(ctx, id)
	if err == nil {
		fmt.Fprintf(a.stdout, "resumed: runs go ahead again for the rest of this %s, not limited; the limits hold again from the next\n", strings.Join(periods, " and "))
	}
	return a.finishRecord(rep, err)
}
