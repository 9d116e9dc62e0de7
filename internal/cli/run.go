package cli

import (
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	var key, by, claim string
	cmd := &cobra.Command{
		Use:   "run <schedule> | --claim KEY",
		Short: "Run one schedule now (manual run), through every gate",
		Long: `run starts one run of a schedule outside its timing. Every gate still
applies: tier 2 and approval-bound tools need an approval, tier 1 counts
against the per-day budget, scopes and rate limits apply. The ledger marks
it scheduled_vs_manual: manual. The idempotency key defaults to one per
schedule per minute; a key that completed is never run again.

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
			if len(args) == 0 || claim != "" {
				return a.runClaim(cmd.Context(), args, claim, key, f) // plan.go
			}
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			if len(key) > 256 {
				return errkind.Usagef("--idempotency-key is longer than 256 characters")
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			if key != "" {
				key = s.ID + "@manual:" + key
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbRun, s.Name, by, f)
			if err != nil {
				return err
			}
			rep, err := r.Manual(cmd.Context(), s, key, id)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	byFlag(cmd, &by)
	cmd.Flags().StringVar(&key, "idempotency-key", "", "the run's idempotency key; a key that completed never runs again")
	cmd.Flags().StringVar(&claim, "claim", "", "run the task astra plan claimed under this key, as a job of its matrix (default $ASTRA_CLAIM)")
	return cmd
}
