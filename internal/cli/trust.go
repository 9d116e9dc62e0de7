package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/model"
)

func (a *app) trustCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Acknowledge tampering with a sealed ledger, so tier 2 runs again",
		Example: `  astra ledger cat | grep ledger.tampered
  astra trust resume --reason "checked: a mistaken edit of var/state, put back"`,
	}
	cmd.AddCommand(a.trustResumeCmd())
	return cmd
}

// trustResumeOptions are `astra trust resume`'s flags.
type trustResumeOptions struct {
	decision
}

func (a *app) trustResumeCmd() *cobra.Command {
	var o trustResumeOptions
	cmd := &cobra.Command{
		Use:   "resume --reason TEXT",
		Short: "Let tier 2 run again after a run found and undid tampering (recorded)",
		Long: `When a run of a sealed ledger finds astra's files changed by commits it did
not seal, or ledger lines no valid seal covers, it puts them back (keeping
what it took out under var/quarantine/), records ledger.tampered, and stops
tier 2. Tiers 0 and 1 go on. Once you have looked at what happened
(astra ledger cat | grep ledger.tampered, and the commits it names),
resume records trust.resumed with who you are and why, and tier 2 runs
again.

It records, so it runs where the ledger key is: a workflow_dispatch job in
the key's environment that runs it, started with gh workflow run. It needs
the trust_resume permission (default: whoever may approve).`,
		Example: `  gh workflow run astra-trust.yml -f reason="a mistaken edit of var/state, put back"
  astra trust resume --reason "checked: a mistaken edit of var/state" --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runTrustResume(cmd.Context(), o) },
	}
	o.addFlags(cmd, "why tier 2 may run again: recorded", "check who may resume; record nothing")
	return cmd
}

// runTrustResume is `astra trust resume`.
func (a *app) runTrustResume(ctx context.Context, o trustResumeOptions) error {
	r, id, err := a.decide(ctx, o.decision, model.VerbTrustResume, "tier 2 after tampering", "why tier 2 may run again")
	if err != nil {
		return err
	}
	rep, n, err := r.TrustResume(ctx, o.reason, id)
	if err == nil {
		verb := "acknowledged"
		if o.run.dryRun {
			verb = "would acknowledge"
		}
		fmt.Fprintf(a.stdout, "%s %d tampering record(s) as %s: tier 2 runs again\n", verb, n, id.Login)
	}
	return a.finishRecord(rep, err)
}
