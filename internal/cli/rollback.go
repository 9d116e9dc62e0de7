package cli

import (
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

func (a *app) rollbackCmd() *cobra.Command {
	var f runFlags
	var by string
	var force bool
	cmd := &cobra.Command{
		Use:   "rollback <run>",
		Short: "Run a completed run's compensating command (the tool's rollback)",
		Long: `rollback runs the rollback command of the tool of a completed run (a
compensating action), through the same gates as the run: scopes, rate
limits, budgets. The command gets the run's id and recorded output as
ASTRA_ROLLBACK_OF and ASTRA_ORIGINAL_OUTPUT. You must hold the rollback
permission (permissions.rollback in policies, else the approvers of the
schedule). A run is rolled back once; --force does it again. It records
rollback.completed or rollback.failed, and the run shows as rolled_back in
astra tasks. A tool without a rollback says so.`,
		Example: `  astra rollback 'sch_743e179e@2026-11-23T00:00:00Z#1'
  astra tasks list --status completed --schedule production_deploy   # find the run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbRollback, args[0], by, f)
			if err != nil {
				return err
			}
			rep, err := r.Rollback(cmd.Context(), args[0], id, force)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	byFlag(cmd, &by)
	cmd.Flags().BoolVar(&force, "force", false, "roll back a run that was rolled back before")
	return cmd
}
