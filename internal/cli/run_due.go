package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

// runDueOptions are run-due's flags.
type runDueOptions struct {
	run    runFlags
	filter plan.Filter
	limit  int
	only   []string // schedule ids or names
	shard  string   // K/N
}

func (o *runDueOptions) addFlags(a *app, cmd *cobra.Command) {
	o.run.register(cmd)
	cmd.Flags().IntVar(&o.limit, "limit", 0, "process at most N due candidates (default run.limit, 10); the rest wait for the next run")
	cmd.Flags().StringVar(&o.filter.ScheduleType, "schedule-type", "", "only schedules of this type")
	a.tenantFlag(cmd, &o.filter.Tenant, "only schedules of this tenant")
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "only these schedules (ids or names, repeatable)")
	cmd.Flags().StringVar(&o.shard, "shard", "", "K/N: take the schedules whose id hashes to shard K of N")
}

// runRunDue is `astra run-due`.
func (a *app) runRunDue(ctx context.Context, o runDueOptions) (err error) {
	if !o.run.dryRun {
		if hb := a.heartbeat(); hb != nil {
			a.heartbeatWarning(hb.Start(ctx))
			defer func() { a.heartbeatWarning(hb.Finish(ctx, errkind.ExitCode(err, ctx.Err() != nil) != errkind.ExitOK)) }()
		}
	}
	if o.filter.Shard, o.filter.Of, err = plan.ParseShard(o.shard); err != nil {
		return errkind.Usagef("%w", err)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	if o.filter.Only, err = onlyIDs(cfg, o.only); err != nil {
		return err
	}
	if o.limit == 0 {
		o.limit = a.v.GetInt("run.limit")
	}
	r, err := a.newRunner(cfg, o.run, o.filter, o.limit)
	if err != nil {
		return err
	}
	rep, err := r.RunDue(ctx)
	if rep != nil && !rep.DryRun && a.inGitHubActions() {
		if w := a.inactivity(cfg, rep.Now); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	return a.finishRun(rep, err)
}

// GitHub disables the scheduled workflows of a public repository after 60
// days without activity; run-due warns from inactiveDays.
const inactiveDays = 50

// inactivity warns when the checked-out branch (the default branch, which
// the cron runs on) may go 60 days without a commit before astra's next
// slot: its last commit is inactiveDays old, or the soonest slot of any
// schedule is more than that after it. A run that pushes its ledger commit
// to that branch is such a commit; one on a state branch is not.
func (a *app) inactivity(cfg *model.Config, now time.Time) string {
	repo, err := gitops.Open(a.gitOptions(""))
	if err != nil {
		return ""
	}
	last, err := repo.TipTime()
	if err != nil || last.IsZero() {
		return ""
	}
	var next time.Time
	for _, sc := range cfg.Schedules {
		if sc.Spec != nil && sc.Enabled {
			if t := sc.Spec.Next(now); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return inactivityWarning(repo.Branch(), last, now, next)
}

// inactivityWarning is inactivity's rule: last is the branch's last
// commit, next the soonest slot (zero: none).
func inactivityWarning(branch string, last, now, next time.Time) string {
	const limit = inactiveDays * 24 * time.Hour
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02") }
	why := ""
	switch {
	case now.Sub(last) >= limit:
		why = fmt.Sprintf("the last commit on %s was %s, %d days ago", branch, day(last), int(now.Sub(last).Hours()/24))
	case !next.IsZero() && next.Sub(last) > limit:
		why = fmt.Sprintf("the last commit on %s was %s and the next slot of any schedule is %s, %d days later, with no commit in between",
			branch, day(last), day(next), int(next.Sub(last).Hours()/24))
	default:
		return ""
	}
	return "GitHub disables scheduled workflows in a public repository after 60 days without activity, and " + why +
		": push a commit to " + branch + " before then (or a keep-alive workflow), or re-enable the workflow in the Actions tab once GitHub disabled it"
}

func (a *app) runDueCmd() *cobra.Command {
	var o runDueOptions
	cmd := &cobra.Command{
		Use:   "run-due",
		Short: "Run every schedule that is due, under every gate, and record it all",
		Long: `run-due is what the cron workflow runs. It replays the ledger, finds the
slots that became due since the last run (cron in each schedule's time zone,
intervals, retries whose backoff passed, approved requests), gates each one
(safety tier, task policy, actor scopes, autonomy, rate limits, per-day and
global budgets, approvals) and records every decision in the ledger. Runs
are claimed (and the claims pushed) before any tool starts, so concurrent
runners never run a slot twice. Then it commits and pushes the ledger.

With --dry-run nothing is written: tools that support dry runs run with
ASTRA_DRY_RUN=1, the others are shown as the exact command they would run.

Outside a git repository it refuses to run (exit 2) unless --no-git says
that writing var/ without committing anything is meant.

Exit status: 0 fine, 1 some task failed (recorded), 2 configuration or
ledger error (nothing ran; a protected branch is one), 3 git or GitHub error
after retries, 130 interrupted (SIGINT or SIGTERM: tools are stopped, what
was recorded is committed, nothing more is pushed, and the report says
which commit the remote has).`,
		Example: `  astra run-due --dry-run
  astra run-due --now 2026-11-23T09:00:00Z --dry-run --json
  astra run-due --only morning_health_check --no-push
  astra run-due --schedule-type climate.weekly_plan_suggest --tenant acme --limit 5
  astra run-due --shard 2/4        # this runner takes its share of the schedules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runRunDue(cmd.Context(), o) },
	}
	o.addFlags(a, cmd)
	return cmd
}
