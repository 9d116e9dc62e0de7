package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

// rollbackOptions are `astra rollback`'s flags and argument.
type rollbackOptions struct {
	runID string // the run to roll back
	by    string
	force bool
	run   runFlags
}

func (a *app) rollbackCmd() *cobra.Command {
	var o rollbackOptions
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
			o.runID = args[0]
			return a.runRollback(cmd.Context(), o)
		},
	}
	o.run.register(cmd)
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.force, "force", false, "roll back a run that was rolled back before")
	return cmd
}

// runRollback is `astra rollback`.
func (a *app) runRollback(ctx context.Context, o rollbackOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbRollback, o.runID, o.by, o.run)
	if err != nil {
		return err
	}
	rep, err := r.Rollback(ctx, o.runID, id, o.force)
	return a.finishRun(rep, err)
}
