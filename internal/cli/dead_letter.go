package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

func (a *app) deadLetterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dead-letter",
		Short: "List and release slots that failed every attempt",
		Example: `  astra dead-letter list
  astra dead-letter retry nightly_sync`,
	}
	cmd.AddCommand(a.deadLetterListCmd(), a.deadLetterRetryCmd())
	return cmd
}

// deadLetterListOptions are `astra dead-letter list`'s: it has no flags of
// its own.
type deadLetterListOptions struct{}

func (a *app) deadLetterListCmd() *cobra.Command {
	var o deadLetterListOptions
	return a.limitFlag(&cobra.Command{
		Use:   "list",
		Short: "Show dead-lettered slots",
		Example: `  astra dead-letter list
  astra dead-letter list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDeadLetterList(cmd.Context(), o) },
	})
}

// runDeadLetterList is `astra dead-letter list`.
func (a *app) runDeadLetterList(_ context.Context, _ deadLetterListOptions) error {
	st, err := a.replay()
	if err != nil {
		return err
	}
	return printRows(a, introspect.DeadLetters(st), "no dead letters", "KEY\tATTEMPTS\tSINCE\tERROR", func(d *state.DeadLetter) string {
		return fmt.Sprintf("%s\t%d\t%s\t%s", d.Key, d.Attempts, d.At.Format(time.RFC3339), truncate(d.Error, 100))
	})
}

// deadLetterRetryOptions are `astra dead-letter retry`'s flags and
// argument.
type deadLetterRetryOptions struct {
	ref string // a schedule, a key or a run
	by  string
	run runFlags
}

func (a *app) deadLetterRetryCmd() *cobra.Command {
	var o deadLetterRetryOptions
	cmd := &cobra.Command{
		Use:   "retry <schedule|key|run>",
		Short: "Release dead letters: they run again at the next run-due (recorded)",
		Example: `  astra dead-letter retry autonomous_coding      # every dead letter of the schedule
  astra dead-letter retry 'sch_a2ebb623@2026-11-22T08:00:00Z'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ref = args[0]
			return a.runDeadLetterRetry(cmd.Context(), o)
		},
	}
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "commit locally, do not push")
	return cmd
}

// runDeadLetterRetry is `astra dead-letter retry`.
func (a *app) runDeadLetterRetry(ctx context.Context, o deadLetterRetryOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	ref := strings.SplitN(o.ref, "#", 2)[0] // a run id names its key
	if s := cfg.Schedule(ref); s != nil {
		ref = s.ID
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbDeadLetterRetry, o.ref, o.by, o.run)
	if err != nil {
		return err
	}
	rep, released, err := r.ReleaseDeadLetters(ctx, ref, id)
	if err == nil {
		fmt.Fprintf(a.stdout, "released %s; the next run-due retries them\n", strings.Join(released, ", "))
	}
	return a.finishRecord(rep, err)
}
