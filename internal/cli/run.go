package cli

import (
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	var key, by string
	cmd := &cobra.Command{
		Use:   "run <schedule>",
		Short: "Run one schedule now (manual run), through every gate",
		Long: `run starts one run of a schedule outside its timing. Every gate still
applies: tier 2 and approval-bound tools need an approval, tier 1 counts
against the per-day budget, scopes and rate limits apply. The ledger marks
it scheduled_vs_manual: manual. The idempotency key defaults to one per
schedule per minute; a key that completed is never run again.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra run morning_health_check
  astra run autonomous_coding --idempotency-key ticket-1234
  astra run production_deploy --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			if len(key) > 256 {
				return usageErrorf("--idempotency-key is longer than 256 characters")
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
	return cmd
}
