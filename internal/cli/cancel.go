package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/model"
)

// cancelOptions are `astra cancel`'s flags.
type cancelOptions struct {
	decision
}

func (a *app) cancelCmd() *cobra.Command {
	var o cancelOptions
	cmd := &cobra.Command{
		Use:   "cancel <key|run id> --reason TEXT",
		Short: "Withdraw a pending retry or approval request of one run, or stop it running (recorded)",
		Long: `cancel records run.cancelled with who you are and why: the run's waiting
retry, or its approval request (pending, or approved and not yet run), is
withdrawn and the next run-due does not run it. Name the run by its
idempotency key (schedule@slot) or a run id (key#attempt).

A running attempt is stopped by the process running it (run-due, or a
fan-out job's run --claim), which looks for a cancel every cancel_poll
(policies defaults:, default 30s): its tool is killed and the attempt
recorded as failed, reason cancelled, and not retried. Pull first: the
claim must be in this checkout's ledger. Once the cancel is pushed, astra
closes a withdrawn request's approval pull request with a comment that
says who and why.

It records, so it runs where the ledger key is. It needs the cancel
permission (default: whoever may approve).`,
		Example: `  astra cancel nightly@2026-11-22T01:00:00Z --reason "superseded by the fix"`,
		Args:    cobra.ExactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return a.runCancel(cmd.Context(), args[0], o) },
	}
	o.addFlags(cmd, "why it should not run: recorded", "check who may cancel; record nothing")
	return cmd
}

// runCancel is `astra cancel`.
func (a *app) runCancel(ctx context.Context, ref string, o cancelOptions) error {
	r, id, err := a.decide(ctx, o.decision, model.VerbCancel, ref, "why it should not run")
	if err != nil {
		return err
	}
	rep, key, err := r.Cancel(ctx, ref, o.reason, id)
	if err == nil {
		verb := "cancelled"
		if o.run.dryRun {
			verb = "would cancel"
		}
		fmt.Fprintf(a.stdout, "%s %s as %s: it does not run; an attempt running now is stopped\n", verb, key, id.Login)
	}
	return a.finishRecord(rep, err)
}
