package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
)

// scheduleView is `astra schedules show`: one schedule's resolved
// settings and where it stands. Payload and environment values may be
// secret: only their names are shown.
type scheduleView struct {
	ID          string                `json:"id"`
	Name        string                `json:"name"`
	Tenant      string                `json:"tenant,omitempty"`
	Source      string                `json:"source"`
	Extends     string                `json:"extends,omitempty"`
	Trigger     string                `json:"trigger"`
	Timezone    string                `json:"timezone"`
	Tool        string                `json:"tool"`
	Tier        int                   `json:"tier"`
	Autonomy    string                `json:"autonomy"`
	Actor       string                `json:"actor"`
	Enabled     bool                  `json:"enabled"`
	Priority    int                   `json:"priority"`
	PerDay      int                   `json:"per_day_budget"`
	Budget      model.TaskBudget      `json:"budget"`
	Retry       model.Retry           `json:"retry"`
	Catchup     model.Catchup         `json:"catchup"`
	Writes      []string              `json:"writes"`
	PayloadKeys []string              `json:"payload_keys"`
	LastRun     *introspect.Task      `json:"last_run,omitempty"`
	Next        []time.Time           `json:"next"`
	Held        string                `json:"held,omitempty"`
	Disabled    bool                  `json:"disabled,omitempty"`
	Approvals   []introspect.Approval `json:"pending_approvals"`
}

func (a *app) schedulesShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show <schedule>",
		Short: "Show one schedule: every resolved setting, its last run, next run, pending approvals and whether it is held",
		Example: `  astra schedules show morning_health_check
  astra schedules show sch_1a2b3c4d --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSchedules,
		RunE:              func(cmd *cobra.Command, args []string) error { return a.runSchedulesShow(cmd.Context(), args[0]) },
	}
}

// runSchedulesShow is `astra schedules show`.
func (a *app) runSchedulesShow(_ context.Context, ref string) error {
	cfg, s, err := a.loadSchedule(ref)
	if err != nil {
		return err
	}
	st, err := a.replay()
	if err != nil {
		return err
	}
	now := a.now()
	v := scheduleView{ID: s.ID, Name: s.Name, Tenant: s.Tenant, Source: s.Meta.Pos.String(), Extends: s.Extends, Trigger: introspect.TriggerOf(s),
		Timezone: s.Timezone, Tool: s.TargetTool, Tier: int(s.SafetyTier), Autonomy: s.Autonomy.Short(), Actor: s.Actor,
		Enabled: s.Enabled, Priority: s.Priority, PerDay: s.PerDayBudget, Budget: s.Budget, Retry: s.Retry, Catchup: s.Catchup,
		Writes: []string{}, PayloadKeys: slices.Sorted(maps.Keys(s.Payload)), Next: []time.Time{}, Approvals: []introspect.Approval{}}
	if t := cfg.Policies.Tools[s.TargetTool]; t != nil && t.Writes != nil {
		v.Writes = t.Writes
	}
	if v.PayloadKeys == nil {
		v.PayloadKeys = []string{}
	}
	last, err := introspect.Tasks(a.store(), now, introspect.Query{Schedule: s.ID, Limit: 1})
	if err != nil {
		return err
	}
	if len(last) > 0 {
		v.LastRun = &last[0]
	}
	if up := introspect.Upcoming(cfg, st, []*model.Schedule{s}, now, 1); len(up) > 0 {
		v.Next, v.Held, v.Disabled = nonNil(up[0].Next), up[0].Held, up[0].Disabled
	}
	repo := introspect.Repository{ServerURL: serverURL(a.getenv), Name: a.getenv("GITHUB_REPOSITORY")}
	for _, ap := range introspect.Approvals(cfg, st, a.repo(), repo, now) {
		if ap.ScheduleID == s.ID {
			v.Approvals = append(v.Approvals, ap)
		}
	}
	if a.json() {
		return a.printJSON(v)
	}
	return a.printScheduleView(v)
}

func (a *app) printScheduleView(v scheduleView) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	line("id", "%s", v.ID)
	line("name", "%s", v.Name)
	line("tenant", "%s", cmp.Or(v.Tenant, "-"))
	line("defined in", "%s", v.Source)
	line("extends", "%s", cmp.Or(v.Extends, "-"))
	line("trigger", "%s (%s)", v.Trigger, v.Timezone)
	line("tool", "%s, tier %d, autonomy %s, as actor %s", v.Tool, v.Tier, v.Autonomy, v.Actor)
	line("enabled", "%v (priority %d)", v.Enabled, v.Priority)
	line("per-day budget", "%d runs", v.PerDay)
	line("task budget", "%d tokens, %s, %s wall clock, %d tool calls", v.Budget.MaxTokens, v.Budget.MaxCost.Dollars(), v.Budget.MaxWallClock.D(), v.Budget.MaxToolCalls)
	line("retry", "%d attempts, backoff %s up to %s", v.Retry.MaxAttempts, v.Retry.BackoffBase.D(), v.Retry.BackoffMax.D())
	line("catch-up", "%s within %s", v.Catchup.Policy, v.Catchup.Window.D())
	line("writes", "%s", cmp.Or(strings.Join(v.Writes, ", "), "-"))
	line("payload keys", "%s", cmp.Or(strings.Join(v.PayloadKeys, ", "), "-"))
	if r := v.LastRun; r != nil {
		line("last run", "%s %s (run %s)", fmtTime(cmp.Or(r.Ended, r.Started)), r.Status, r.RunID)
	} else {
		line("last run", "never")
	}
	next := "-"
	if len(v.Next) > 0 {
		next = fmtTime(v.Next[0])
	}
	line("next run", "%s", next)
	switch {
	case v.Disabled:
		line("state", "disabled (enabled: false)")
	case v.Held != "":
		line("state", "held: %s", v.Held)
	default:
		line("state", "active")
	}
	if len(v.Approvals) == 0 {
		line("pending approvals", "none")
	}
	for _, ap := range v.Approvals {
		line("pending approval", "slot %s, %s, expires %s %s", fmtTime(ap.Slot), ap.Status, fmtTime(ap.Expires), ap.URL)
	}
	return tw.Flush()
}
