package cli

import (
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

func (a *app) rollbackCmd() *cobra.Command {
	var f runFlags
	var by string
	cmd := &cobra.Command{
		Use:   "rollback <run>",
		Short: "Run a completed run's compensating command (the tool's rollback)",
		Long: `rollback runs the rollback command of the tool of a completed run (a
compensating action), through the same gates as the run: scopes, rate
limits, budgets. You running it is the approval; when the task policy names
an approver role, --by must be one of its logins. It records
rollback.completed or rollback.failed. A tool without a rollback says so.`,
		Example: `  astra rollback 'sch_743e179e@2026-11-23T00:00:00Z#1' --by octocat
  astra tasks list --status completed --schedule production_deploy   # find the run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if by == "" {
				by = whoami(a.getenv)
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			rep, err := r.Rollback(cmd.Context(), args[0], by)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&by, "by", "", "who rolls back (default $GITHUB_ACTOR or $USER)")
	return cmd
}
