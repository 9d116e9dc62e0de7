package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/runner"
)

// backfillOptions are `astra backfill`'s flags and argument.
type backfillOptions struct {
	schedule, from, to, reason, by string
	max                            int
	run                            runFlags
}

func (a *app) backfillCmd() *cobra.Command {
	var o backfillOptions
	cmd := &cobra.Command{
		Use:   "backfill <schedule> --from T1 --to T2 --reason TEXT",
		Short: "Run a schedule's past slots in a range, each once, through every gate (recorded)",
		Long: `backfill runs the slots of a schedule from --from to --to (both included;
RFC 3339 times, or dates in the schedule's timezone, --to's date whole),
oldest first, as run-due would have run them: each under its own slot key,
through the same gates, budgets and approvals. A slot that already
completed is not run again (recorded as a duplicate), so a backfill can be
repeated. The schedule's window and exclusion calendars apply.

It is bounded: a range holding more than --max slots (default 24, at most
100) is refused; narrow it or raise --max. It needs the backfill permission
(default: whoever may approve) and records backfill.requested with who you
are, the range and the reason before anything runs. --dry-run lists the
slots and what the gates would decide, and records nothing.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra backfill nightly_report --from 2026-11-20 --to 2026-11-22 --reason "CI was down" --dry-run
  astra backfill nightly_report --from 2026-11-20T00:00:00Z --to 2026-11-22T23:59:59Z --reason "CI was down"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.schedule = args[0]
			return a.runBackfill(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "first instant of the range: an RFC 3339 time or a date")
	f.StringVar(&o.to, "to", "", "last instant of the range: an RFC 3339 time or a date (the whole day)")
	f.StringVar(&o.reason, "reason", "", "why the slots run now: recorded")
	f.IntVar(&o.max, "max", model.DefaultBackfillMax, "most slots the range may hold; a wider range is refused")
	f.BoolVar(&o.run.dryRun, "dry-run", false, "list the slots and what the gates decide; run and record nothing")
	f.BoolVar(&o.run.noPush, "no-push", false, "commit locally, do not push")
	byFlag(cmd, &o.by)
	for _, name := range []string{"from", "to", "reason"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// runBackfill is `astra backfill`.
func (a *app) runBackfill(ctx context.Context, o backfillOptions) error {
	if strings.TrimSpace(o.reason) == "" {
		return errkind.Usagef("--reason is empty: say why these slots run now, it is recorded")
	}
	cfg, s, err := a.loadSchedule(o.schedule)
	if err != nil {
		return err
	}
	from, err := backfillBound("--from", o.from, s.Loc, false)
	if err != nil {
		return err
	}
	to, err := backfillBound("--to", o.to, s.Loc, true)
	if err != nil {
		return err
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbBackfill, s.Name, o.by, o.run)
	if err != nil {
		return err
	}
	rep, err := r.Backfill(ctx, s, runner.Backfill{From: from, To: to, Reason: o.reason, Max: o.max}, id)
	return a.finishRun(rep, err)
}

// backfillBound reads an RFC 3339 time, or a date in loc: its first
// instant, or with end its last.
func backfillBound(flag, v string, loc *time.Location, end bool) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseInLocation(time.DateOnly, v, loc)
	if err != nil {
		return time.Time{}, errkind.Usagef("%s %q: want an RFC 3339 time (2026-11-20T09:00:00Z) or a date (2026-11-20)", flag, v)
	}
	if end {
		d = d.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	return d, nil
}
