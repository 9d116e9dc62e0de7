package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// ledgerCorrectClockOptions are `astra ledger correct-clock`'s flags.
type ledgerCorrectClockOptions struct {
	after string // --after, RFC3339
	decision
}

func (a *app) ledgerCorrectClockCmd() *cobra.Command {
	var o ledgerCorrectClockOptions
	cmd := &cobra.Command{
		Use:   "correct-clock --after T --reason TEXT",
		Short: "Void what a wrong clock decided after T, so the schedules resume at their next real slot (recorded)",
		Long: `correct-clock repairs what a run whose clock was ahead left behind: decided
slots are never decided again, so its schedules wait for that clock's time.
It records one ledger.clock_corrected event, with who decided it and why,
that voids what was decided after T:

  - every schedule's last decided slot goes back to T: the next run takes
    its slots after T up under its catch-up policy, so it runs again
    within one run;
  - slots after T that a run took early (ran, or may have) count as done:
    when their time comes they are recorded as duplicates and not run, so
    no slot runs twice;
  - claims made after T end (the next run records them lost and retries
    them per policy); retries set in the future are due at once; approval
    requests made after T and still pending end (the next slot asks again);
    keys completed and runs started in the future count from the correction.

T may not be later than now, and this command's own clock is checked
against a trusted time like any run's. It needs the correct_clock
permission. --dry-run shows what it would void.`,
		Example: `  astra schedules next                 # a schedule waits for a slot a year ahead
  astra ledger correct-clock --after 2026-11-22T06:00:00Z --reason "runner-3's clock was a year ahead" --dry-run
  astra ledger correct-clock --after 2026-11-22T06:00:00Z --reason "runner-3's clock was a year ahead"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runLedgerCorrectClock(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.after, "after", "", "void what was decided after this RFC3339 time (the wrong clock's first decisions)")
	o.addFlags(cmd, "why: recorded with the correction", "show what would be voided; record nothing")
	_ = cmd.MarkFlagRequired("after")
	return cmd
}

// runLedgerCorrectClock is `astra ledger correct-clock`.
func (a *app) runLedgerCorrectClock(ctx context.Context, o ledgerCorrectClockOptions) error {
	after, err := time.Parse(time.RFC3339, o.after)
	if err != nil {
		return errkind.Usagef("--after %q is not an RFC3339 time such as 2026-11-22T06:00:00Z", o.after)
	}
	target := "the decisions made after " + after.UTC().Format(time.RFC3339)
	r, id, err := a.decide(ctx, o.decision, model.VerbCorrectClock, target, "why the clock is corrected")
	if err != nil {
		return err
	}
	rep, c, err := r.CorrectClock(ctx, after, o.reason, id)
	if err == nil {
		a.printCorrection(c, o.run.dryRun)
	}
	return a.finishRecord(rep, err)
}

// printCorrection says what a correction voided, and what happens next.
func (a *app) printCorrection(c *state.Correction, dry bool) {
	w, stamp := a.stdout, func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	verb := "voided"
	if dry {
		verb = "would void (dry run: nothing recorded)"
	}
	fmt.Fprintf(w, "%s what was decided after %s:\n", verb, stamp(c.After))
	for _, id := range slices.Sorted(maps.Keys(c.Slots)) {
		fmt.Fprintf(w, "  %s: last decided slot %s, back to %s; its slots after that are due again under its catch-up policy\n", id, stamp(c.Slots[id]), stamp(c.After))
	}
	for _, key := range slices.Sorted(maps.Keys(c.Early)) {
		fmt.Fprintf(w, "  %s ran early: it counts as done, and is not run when its time comes\n", key)
	}
	for _, key := range c.Claims {
		fmt.Fprintf(w, "  claim %s ends: the next run records it lost and retries it per policy\n", key)
	}
	for _, key := range c.Retries {
		fmt.Fprintf(w, "  retry %s is due at once\n", key)
	}
	for _, id := range c.Approvals {
		fmt.Fprintf(w, "  the approval request of %s ends: its next slot asks again\n", id)
	}
	for _, key := range c.Keys {
		fmt.Fprintf(w, "  %s completed in the future: done from now, for %s\n", key, keyRetention)
	}
	for _, actor := range c.Actors {
		fmt.Fprintf(w, "  %s's run starts in the future no longer count against its rate limits\n", actor)
	}
	fmt.Fprintln(w, "`astra schedules next` shows when each schedule runs next")
}
