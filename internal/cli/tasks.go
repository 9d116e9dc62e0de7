package cli

import (
	"bufio"
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/tools"
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

// tasksListOptions are `astra tasks list`'s flags.
type tasksListOptions struct {
	query    introspect.Query // Since and Schedule are filled from since and schedule
	schedule string           // id or name
	since    string           // a duration back from now, or an RFC3339 time
}

func (a *app) tasksListCmd() *cobra.Command {
	var o tasksListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Example: `  astra tasks list
  astra tasks list --schedule autonomous_coding --status failed --since 72h
  astra tasks list --actor n8n_workflow_7 --tenant zora_shop
  astra tasks list --status skipped --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runTasksList(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.schedule, "schedule", "", "only this schedule (id or name)")
	cmd.Flags().StringVar(&o.query.Actor, "actor", "", "only runs as this actor (its exact id)")
	cmd.Flags().StringVar(&o.query.Tenant, "tenant", "", "only runs of this tenant's schedules")
	cmd.Flags().StringVar(&o.query.Status, "status", "", "running, completed, failed, skipped, rolled_back or all (default: runs, not skips)")
	cmd.Flags().StringVar(&o.since, "since", "", "how far back: a duration (72h, 7d) or an RFC3339 time (default: this month)")
	cmd.Flags().IntVar(&o.query.Limit, "limit", 50, "at most this many, newest first (0 = all)")
	return cmd
}

// runTasksList is `astra tasks list`.
func (a *app) runTasksList(_ context.Context, o tasksListOptions) error {
	q := o.query
	q.Output = a.json() || a.verbose()
	var err error
	if q.Since, err = tools.Since(o.since, a.now()); err != nil {
		return errkind.Usagef("--%w", err)
	}
	if o.schedule != "" {
		if q.Schedule, err = a.scheduleID(o.schedule); err != nil {
			return err
		}
	}
	switch q.Status {
	case "", "running", "completed", "failed", "skipped", "rolled_back", "all":
	default:
		return errkind.Usagef("--status %q: use running, completed, failed, skipped, rolled_back or all", q.Status)
	}
	if q.Limit <= 0 && a.json() {
		return a.streamTasks(q)
	}
	stop := a.busy("reading the ledger")
	ts, err := introspect.Tasks(a.store(), a.now(), q)
	stop()
	if err != nil {
		return err
	}
	return a.printTasks(ts)
}

// streamTasks prints an unbounded listing as JSON while it is read, so
// that memory does not follow the month; the bytes are printJSON's.
func (a *app) streamTasks(q introspect.Query) error {
	w := bufio.NewWriter(a.stdout)
	n := 0
	var werr error
	err := introspect.Each(a.store(), a.now(), q, func(t *introspect.Task) bool {
		b, err := json.MarshalIndent(t, "  ", "  ")
		if err != nil {
			werr = err
			return false
		}
		sep := ",\n  "
		if n == 0 {
			sep = "[\n  "
		}
		n++
		w.WriteString(sep)
		_, werr = w.Write(b)
		return werr == nil
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n == 0 {
		w.WriteString("[]\n")
	} else {
		w.WriteString("\n]\n")
	}
	return w.Flush()
}

// tasksByTraceOptions are `astra tasks by-trace`'s argument.
type tasksByTraceOptions struct {
	traceID string
}

func (a *app) tasksByTraceCmd() *cobra.Command {
	var o tasksByTraceOptions
	return &cobra.Command{
		Use:     "by-trace <trace_id>",
		Short:   "Show every run of one trace: the run, its retries and chained steps",
		Example: `  astra tasks by-trace 4bf92f3577b34da6a3ce929d0e0e4736`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.traceID = args[0]
			return a.runTasksByTrace(cmd.Context(), o)
		},
	}
}

// runTasksByTrace is `astra tasks by-trace`.
func (a *app) runTasksByTrace(_ context.Context, o tasksByTraceOptions) error {
	stop := a.busy("reading the ledger")
	ts, err := introspect.ByTrace(a.store(), a.now(), o.traceID, a.json() || a.verbose())
	stop()
	if err != nil {
		return err
	}
	return a.printTasks(ts)
}

// tasksLastFailedOptions are `astra tasks last-failed`'s flags.
type tasksLastFailedOptions struct {
	limit int
}

func (a *app) tasksLastFailedCmd() *cobra.Command {
	var o tasksLastFailedOptions
	cmd := &cobra.Command{
		Use:     "last-failed",
		Short:   "Show the most recent failed runs",
		Example: `  astra tasks last-failed --limit 10`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runTasksLastFailed(cmd.Context(), o) },
	}
	cmd.Flags().IntVar(&o.limit, "limit", 10, "how many")
	return cmd
}

// runTasksLastFailed is `astra tasks last-failed`.
func (a *app) runTasksLastFailed(_ context.Context, o tasksLastFailedOptions) error {
	stop := a.busy("reading the ledger")
	ts, err := introspect.LastFailed(a.store(), a.now(), o.limit, a.json() || a.verbose())
	stop()
	if err != nil {
		return err
	}
	return a.printTasks(ts)
}

// scheduleID resolves a schedule id or name from the configuration.
func (a *app) scheduleID(ref string) (string, error) {
	_, s, err := a.loadSchedule(ref)
	if err != nil {
		return "", err
	}
	return s.ID, nil
}
