package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/report"
)

func (a *app) tasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Query run history from the ledger (seed 000 introspection)",
		Example: `  astra tasks list --status failed --since 24h
  astra tasks last-failed
  astra tasks by-trace 4bf92f3577b34da6a3ce929d0e0e4736`,
	}
	cmd.AddCommand(a.tasksListCmd(), a.tasksByTraceCmd(), a.tasksLastFailedCmd())
	return cmd
}

func (a *app) tasksListCmd() *cobra.Command {
	var q introspect.Query
	var schedule, since string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Example: `  astra tasks list
  astra tasks list --schedule autonomous_coding --status failed --since 72h
  astra tasks list --status skipped --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if q.Since, err = parseSince(since, a.now()); err != nil {
				return err
			}
			if schedule != "" {
				if q.Schedule, err = a.scheduleID(schedule); err != nil {
					return err
				}
			}
			switch q.Status {
			case "", "running", "completed", "failed", "skipped", "all":
			default:
				return usageErrorf("--status %q: use running, completed, failed, skipped or all", q.Status)
			}
			ts, err := introspect.Tasks(a.store(), a.now(), q)
			if err != nil {
				return err
			}
			return a.printTasks(ts)
		},
	}
	cmd.Flags().StringVar(&schedule, "schedule", "", "only this schedule (id or name)")
	cmd.Flags().StringVar(&q.Status, "status", "", "running, completed, failed, skipped or all (default: runs, not skips)")
	cmd.Flags().StringVar(&since, "since", "", "how far back: a duration (72h, 7d) or an RFC3339 time (default: this month)")
	cmd.Flags().IntVar(&q.Limit, "limit", 50, "at most this many, newest first (0 = all)")
	return cmd
}

func (a *app) tasksByTraceCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "by-trace <trace_id>",
		Short:   "Show every run of one trace: the run, its retries and chained steps",
		Example: `  astra tasks by-trace 4bf92f3577b34da6a3ce929d0e0e4736`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := introspect.ByTrace(a.store(), a.now(), args[0])
			if err != nil {
				return err
			}
			return a.printTasks(ts)
		},
	}
}

func (a *app) tasksLastFailedCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:     "last-failed",
		Short:   "Show the most recent failed runs",
		Example: `  astra tasks last-failed --limit 10`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := introspect.LastFailed(a.store(), a.now(), limit)
			if err != nil {
				return err
			}
			return a.printTasks(ts)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "how many")
	return cmd
}

func (a *app) printTasks(ts []introspect.Task) error {
	return printRows(a, ts, "no tasks", "STARTED\tSTATUS\tRUN\tTOOL\tTIER\tUSAGE\tDETAIL", func(t introspect.Task) string {
		detail := t.Reason
		if t.Error != "" {
			detail = strings.TrimSpace(detail + " " + t.Error)
		}
		if a.verbose() && t.Output != "" {
			detail += " | " + strings.ReplaceAll(strings.TrimSpace(t.Output), "\n", " / ")
		}
		usage := ""
		if !t.Usage.IsZero() {
			usage = fmt.Sprintf("%dtok $%.4f %dms", t.Usage.Tokens, t.Usage.CostUSD, t.Usage.WallClockMS)
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s", t.Started.Format(time.RFC3339), t.Status, t.RunID, t.Tool, t.Tier, usage, truncate(detail, 120))
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// parseSince reads --since: a duration back from now (72h, 7d) or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		return time.Time{}, usageErrorf("--since %q: use a duration such as 72h or 7d, or an RFC3339 time", s)
	}
	return now.Add(-d.D()), nil
}

// scheduleID resolves a schedule id or name from the configuration.
func (a *app) scheduleID(ref string) (string, error) {
	_, s, err := a.loadSchedule(ref)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

func (a *app) budgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Show per-schedule run budgets and global spend against the limits",
		Long: `budget shows, for today (UTC), each tier-1+ schedule's per-day run budget
(seed 000: per_day, consumed, left, last_reset) and the global spend of the
day and the month against the limits in policies (seed 002), with the alert
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
