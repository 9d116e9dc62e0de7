package cli

import (
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/tools"
	"github.com/spf13/cobra"
)

func (a *app) tasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Query run history from the ledger",
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
  astra tasks list --actor n8n_workflow_7 --tenant zora_shop
  astra tasks list --status skipped --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if q.Since, err = tools.Since(since, a.now()); err != nil {
				return errkind.Usagef("--%w", err)
			}
			if schedule != "" {
				if q.Schedule, err = a.scheduleID(schedule); err != nil {
					return err
				}
			}
			switch q.Status {
			case "", "running", "completed", "failed", "skipped", "rolled_back", "all":
			default:
				return errkind.Usagef("--status %q: use running, completed, failed, skipped, rolled_back or all", q.Status)
			}
			ts, err := introspect.Tasks(a.store(), a.now(), q)
			if err != nil {
				return err
			}
			return a.printTasks(ts)
		},
	}
	cmd.Flags().StringVar(&schedule, "schedule", "", "only this schedule (id or name)")
	cmd.Flags().StringVar(&q.Actor, "actor", "", "only runs as this actor (its exact id)")
	cmd.Flags().StringVar(&q.Tenant, "tenant", "", "only runs of this tenant's schedules")
	cmd.Flags().StringVar(&q.Status, "status", "", "running, completed, failed, skipped, rolled_back or all (default: runs, not skips)")
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

// scheduleID resolves a schedule id or name from the configuration.
func (a *app) scheduleID(ref string) (string, error) {
	_, s, err := a.loadSchedule(ref)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}
