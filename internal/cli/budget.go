package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/spf13/cobra"
)

func (a *app) budgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show per-schedule run budgets and global spend against the limits",
		Long: `budget shows, for today (UTC), each tier-1+ schedule's per-day run budget
(per_day, consumed, left, last_reset) and the global spend of the day and
the month against the limits in policies, with the alert
level reached and any pause.`,
		Example: `  astra budget
  astra budget --json
  astra budget resume    # lift a global-budget pause (recorded)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			g := b.Global
			fmt.Fprintf(a.stdout, "Global spend (%s UTC):\n", b.Day)
			fmt.Fprintf(a.stdout, "  today  $%.2f of $%.2f  %s\n", g.DayUSD, g.DayLimitUSD, report.Bar(g.DayUSD, g.DayLimitUSD, 30))
			fmt.Fprintf(a.stdout, "  month  $%.2f of $%.2f  %s\n", g.MonthUSD, g.MonthLimitUSD, report.Bar(g.MonthUSD, g.MonthLimitUSD, 30))
			fmt.Fprintf(a.stdout, "  tokens %d today, %d this month; on limit: %s\n", g.DayTokens, g.MonthTokens, g.OnLimitReached)
			if g.AlertLevel > 0 {
				fmt.Fprintf(a.stdout, "  alert level reached: %.0f%%\n", g.AlertLevel*100)
			}
			if g.Paused != "" {
				fmt.Fprintf(a.stdout, "  PAUSED: %s; `astra budget resume` lifts it\n", g.Paused)
			}
			fmt.Fprintln(a.stdout, "\nPer-day run budgets (tier 1 and 2):")
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  SCHEDULE\tTIER\tPER DAY\tCONSUMED\tLEFT")
			for _, s := range b.Schedules {
				if s.PerDay == 0 {
					continue
				}
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\n", s.Name, s.Tier, s.PerDay, s.Consumed, s.Left)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(a.budgetResumeCmd())
	return cmd
}

func (a *app) budgetResumeCmd() *cobra.Command {
	var by string
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Lift a global-budget pause for the rest of its period (recorded)",
		Example: `  astra budget            # see whether spend paused runs
  astra budget resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbResume, "the global budget", by, f)
			if err != nil {
				return err
			}
			rep, period, err := r.Resume(cmd.Context(), id)
			if err == nil {
				fmt.Fprintf(a.stdout, "resumed: runs go ahead again for the rest of this %s; the limit stays\n", period)
			}
			return a.finishRecord(rep, err)
		},
	}
	byFlag(cmd, &by)
	cmd.Flags().BoolVar(&f.noPush, "no-push", false, "commit locally, do not push")
	return cmd
}
