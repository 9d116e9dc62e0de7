package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

// runOptions are `astra run`'s flags and argument.
type runOptions struct {
	schedule string // "" with --claim
	run      runFlags
	key      string
	by       string
	claim    string
}

func (a *app) runCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run <schedule> | --claim KEY",
		Short: "Run one schedule now (manual run), through every gate",
		Long: `run starts one run of a schedule outside its timing. Every gate still
applies: tier 2 and approval-bound tools need an approval, tier 1 counts
against the per-day budget, scopes and rate limits apply. The ledger marks
it scheduled_vs_manual: manual. The idempotency key defaults to one per
schedule per minute. A key that completed does not run again for ` + keyRetention + `
from its completion, across months too (a run with it is recorded as
skipped, duplicate); after that the same key is a new request.

With --claim KEY (default $ASTRA_CLAIM) it is a job of the matrix that
'astra plan' wrote: it takes the claim that plan made and runs that task,
under its budgets and as run-due would; a claim that is not open for a job
(done, lost, taken by another job, unknown) is refused, recorded, exit 2.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra run morning_health_check
  astra run autonomous_coding --idempotency-key ticket-1234
  astra run production_deploy --dry-run
  astra run --claim nightly_report@2026-11-23T09:00:00Z`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.schedule = args[0]
			}
			return a.runRun(cmd.Context(), o)
		},
	}
	o.run.register(cmd)
	byFlag(cmd, &o.by)
	cmd.Flags().StringVar(&o.key, "idempotency-key", "", "the run's idempotency key; a key that completed does not run again for "+keyRetention)
	cmd.Flags().StringVar(&o.claim, "claim", "", "run the task astra plan claimed under this key, as a job of its matrix (default $ASTRA_CLAIM)")
	return cmd
}

// runRun is `astra run`: a manual run of a schedule, or the job of a
// plan's claim (runClaim).
func (a *app) runRun(ctx context.Context, o runOptions) error {
	if o.schedule == "" || o.claim != "" {
		return a.runClaim(ctx, o) // plan.go
	}
	cfg, s, err := a.loadSchedule(o.schedule)
	if err != nil {
		return err
	}
	if len(o.key) > 256 {
		return errkind.Usagef("--idempotency-key is longer than 256 characters")
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	key := o.key
	if key != "" {
		key = s.ID + "@manual:" + key
	}
	id, err := a.who(ctx, r, cfg, model.VerbRun, s.Name, o.by, o.run)
	if err != nil {
		return err
	}
	rep, err := r.Manual(ctx, s, key, id)
	return a.finishRun(rep, err)
}
