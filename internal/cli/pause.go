package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

// pauseOptions are the flags of `astra pause` and `astra resume`.
type pauseOptions struct {
	all bool
	decision
}

// pauseCmd is `astra pause` (stop true) or `astra resume` (stop false).
func (a *app) pauseCmd(stop bool) *cobra.Command {
	var o pauseOptions
	use, short, example := "resume", "Lift the emergency stop: runs start again (recorded)",
		`  astra resume --all --reason "the runaway tool is fixed"`
	if stop {
		use, short, example = "pause", "Emergency stop: no run starts until astra resume --all (recorded)",
			`  astra pause --all --reason "a tool is spamming the tracker"`
	}
	cmd := &cobra.Command{
		Use:   use + " --all --reason TEXT",
		Short: short,
		Long: `astra pause --all records astra.paused with who you are and why: from then
on every run-due, run, trigger and plan starts nothing, and each task it
would have started is recorded as skipped (reason paused). astra resume
--all records astra.resumed, and the next tick runs what is due. Commands
that only read, and resuming, work while paused; astra status and
astra schedules list say it is paused.

It records, so it runs where the ledger key is. It needs the pause
permission (default: whoever may approve).`,
		Example: example,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runPause(cmd.Context(), stop, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.all, "all", false, "every schedule (required: the stop is repository-wide)")
	o.addFlags(cmd, "why: recorded", "check who may do it; record nothing")
	return cmd
}

// runPause is `astra pause` and `astra resume`.
func (a *app) runPause(ctx context.Context, stop bool, o pauseOptions) error {
	if !o.all {
		return errkind.Usagef("--all is required: the stop holds for every schedule (to stop one schedule, set enabled: false)")
	}
	r, id, err := a.decide(ctx, o.decision, model.VerbPause, "every run", "why")
	if err != nil {
		return err
	}
	rep, err := r.PauseAll(ctx, stop, o.reason, id)
	if err == nil {
		what := "paused: no run starts until astra resume --all"
		if !stop {
			what = "resumed: runs start again"
		}
		if o.run.dryRun {
			what = "would be " + what
		}
		fmt.Fprintf(a.stdout, "%s as %s\n", what, id.Login)
	}
	return a.finishRecord(rep, err)
}
