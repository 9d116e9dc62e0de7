package cli

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

func (a *app) schedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List schedules and their next run times",
		Example: `  astra schedules list
  astra schedules next --count 3`,
	}
	cmd.AddCommand(a.schedulesListCmd(), a.schedulesNextCmd(), a.schedulesShowCmd())
	return cmd
}

type scheduleJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	Tenant      string `json:"tenant,omitempty"`
	Trigger     string `json:"trigger"`
	Timezone    string `json:"timezone"`
	Tool        string `json:"target_tool"`
	Tier        int    `json:"safety_tier"`
	Autonomy    string `json:"autonomy"`
	Actor       string `json:"actor"`
	Priority    int    `json:"priority"`
	Enabled     bool   `json:"enabled"`
	PerDay      int    `json:"per_day_budget,omitempty"`
	Source      string `json:"source"`
	ResultRoute string `json:"result_route"`
	LastRun     string `json:"last_run,omitempty"` // when its last run ended, and how: "2026-11-22T09:00:31Z completed"
	Paused      bool   `json:"paused,omitempty"`   // astra pause --all holds: nothing of it starts
}

// schedulesListOptions are `astra schedules list`'s flags.
type schedulesListOptions struct {
	tenant string
	typ    string
}

func (a *app) schedulesListCmd() *cobra.Command {
	var o schedulesListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the schedules astra knows, with their resolved settings",
		Example: `  astra schedules list
  astra schedules list --tenant acme --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runSchedulesList(cmd.Context(), o) },
	}
	a.tenantFlag(cmd, &o.tenant, "only schedules of this tenant")
	cmd.Flags().StringVar(&o.typ, "schedule-type", "", "only schedules of this type")
	return a.limitFlag(cmd)
}

// runSchedulesList is `astra schedules list`.
func (a *app) runSchedulesList(_ context.Context, o schedulesListOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	st, err := a.replay()
	if err != nil {
		return err
	}
	var rows []scheduleJSON
	for _, s := range cfg.Schedules {
		if (o.tenant != "" && s.Tenant != o.tenant) || (o.typ != "" && s.Type != o.typ) {
			continue
		}
		rows = append(rows, scheduleJSON{
			ID: s.ID, Name: s.Name, Type: s.Type, Tenant: s.Tenant, Trigger: introspect.TriggerOf(s),
			Timezone: s.Timezone, Tool: s.TargetTool, Tier: int(s.SafetyTier), Autonomy: s.Autonomy.Short(),
			Actor: s.Actor, Priority: s.Priority, Enabled: s.Enabled, PerDay: s.PerDayBudget,
			Source: s.Meta.Pos.String(), ResultRoute: s.ResultRoute.Type, Paused: st.Stopped != nil,
		})
		if ss := st.Schedules[s.ID]; ss != nil && !ss.LastRunAt.IsZero() {
			rows[len(rows)-1].LastRun = fmtTime(ss.LastRunAt) + " " + ss.LastStatus
		}
	}
	// With more than one tenant, a name may be shared: TENANT tells them
	// apart (--json always has the tenant).
	tenant := func(string) string { return "" }
	if cfg.Tenants() > 1 {
		tenant = func(t string) string { return "\t" + cmp.Or(t, "-") }
	}
	if p := st.Stopped; p != nil && !a.json() {
		fmt.Fprintf(a.stdout, "PAUSED by %s at %s: %s; nothing starts until `astra resume --all`\n", p.By, p.At.UTC().Format(time.RFC3339), p.Reason)
	}
	return printRows(a, rows, "", "ID\tNAME"+tenant("TENANT")+"\tTRIGGER\tTZ\tTOOL\tTIER\tAUTONOMY\tACTOR\tENABLED\tLAST RUN", func(r scheduleJSON) string {
		return fmt.Sprintf("%s\t%s%s\t%s\t%s\t%s\t%d\t%s\t%s\t%v\t%s", r.ID, r.Name, tenant(r.Tenant), r.Trigger, r.Timezone, r.Tool, r.Tier, r.Autonomy, r.Actor, r.Enabled, cmp.Or(r.LastRun, "never"))
	})
}

// schedulesNextOptions are `astra schedules next`'s flags and arguments.
type schedulesNextOptions struct {
	schedules []string // ids or names; none: every enabled schedule
	count     int
}

func (a *app) schedulesNextCmd() *cobra.Command {
	var o schedulesNextOptions
	cmd := &cobra.Command{
		Use:   "next [schedule...]",
		Short: "Show what run-due will run next for each schedule, and when",
		Long: `next shows, for each time-triggered schedule (or the schedules named by id
or name), what a run-due at --now (default: the wall clock) would
take up (slots due now, retries whose backoff passed, approved requests,
slots it would record as missed), what waits (retries backing off, runs in
progress), and the next fire times after that. It reads the ledger as
run-due does: a slot already decided is not shown again, so after a run
whose clock was ahead the schedule waits for that slot, and says so. A gate
that would hold the schedule now (a budget pause, quarantine, a per-day
budget spent) is noted. A disabled schedule (enabled: false) says so: none
of its slots is due, now or later, and its retries wait for it. Times are
shown in UTC and in the schedule's own time zone.`,
		Example: `  astra schedules next
  astra schedules next --count 5 morning_health_check
  astra schedules next --now 2026-03-29T00:00:00Z --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.schedules = args
			return a.runSchedulesNext(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVar(&o.count, "count", 1, "how many fire times per schedule")
	return cmd
}

// runSchedulesNext is `astra schedules next`.
func (a *app) runSchedulesNext(_ context.Context, o schedulesNextOptions) error {
	if o.count < 1 {
		return errkind.Usagef("--count must be at least 1")
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	selected, err := selectSchedules(cfg, o.schedules)
	if err != nil {
		return err
	}
	now := a.now()
	st, tail, err := state.Replay(a.store(), now)
	if err != nil {
		return errkind.Usage(err)
	}
	for _, w := range plan.ClockWarnings(cfg, st, tail.TS, now) {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	out := introspect.Upcoming(cfg, st, selected, now, o.count)
	return printRows(a, out, "", "ID\tNAME\tTRIGGER\tNEXT (UTC)\tLOCAL\tNOTE", nextLines)
}

// nextLines are the table lines of one schedule in `schedules next`: one
// per time, the schedule named on its first.
func nextLines(n introspect.Next) string {
	loc, _ := time.LoadLocation(n.Timezone)
	var lines []string
	add := func(t time.Time, note string) {
		id, name, trig := n.ID, n.Name, n.Trigger
		if len(lines) > 0 {
			id, name, trig = "", "", ""
		}
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", id, name, trig, t.UTC().Format(time.RFC3339), t.In(loc).Format("Mon 2006-01-02 15:04 MST"), note))
	}
	if n.Disabled {
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t-\t-\tdisabled (enabled: false): no slot is due, now or later; enabled again, it resumes at its next slot",
			n.ID, n.Name, n.Trigger))
	}
	for _, d := range n.Due {
		add(d.Slot, d.Note)
	}
	for _, w := range n.Waiting {
		add(w.At, w.Note)
	}
	for i, t := range n.Next {
		note := ""
		if i == 0 && !n.LastDecided.IsZero() {
			note = "the first slot after " + n.LastDecided.UTC().Format(time.RFC3339) + ", already decided by a run whose clock was ahead"
		}
		add(t, note)
	}
	if len(lines) == 0 {
		// Listed rather than left out: a schedule that never fires is a
		// mistake to see (validate warns too).
		lines = append(lines, fmt.Sprintf("%s\t%s\t%s\tnever\t-\tits trigger never fires", n.ID, n.Name, n.Trigger))
	}
	return strings.Join(lines, "\n")
}

// selectSchedules resolves ids or names; no args selects all.
func selectSchedules(cfg *model.Config, refs []string) ([]*model.Schedule, error) {
	if len(refs) == 0 {
		return cfg.Schedules, nil
	}
	var out []*model.Schedule
	for _, r := range refs {
		s, err := findSchedule(cfg, r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// findSchedule resolves a schedule id or name, or says where to look.
func findSchedule(cfg *model.Config, ref string) (*model.Schedule, error) {
	if s := cfg.Schedule(ref); s != nil {
		return s, nil
	}
	var ids []string
	for _, s := range cfg.Schedules {
		if s.Name == ref {
			ids = append(ids, fmt.Sprintf("%s (tenant %s)", s.ID, cmp.Or(s.Tenant, "none")))
		}
	}
	if len(ids) > 1 {
		return nil, errkind.WithHint(errkind.Usagef("%d schedules are named %q, in different tenants", len(ids), ref), "Name one by its id: "+strings.Join(ids, ", ")+".")
	}
	return nil, errkind.Usagef("no schedule with id or name %q (see `astra schedules list`)", ref)
}

// onlyIDs resolves the schedules --only names (ids or names) to their ids.
func onlyIDs(cfg *model.Config, refs []string) ([]string, error) {
	var ids []string
	for _, ref := range refs {
		s := cfg.Schedule(ref)
		if s == nil {
			return nil, errkind.Usagef("--only %q: no such schedule (see `astra schedules list`)", ref)
		}
		ids = append(ids, s.ID)
	}
	return ids, nil
}

// loadSchedule loads the configuration and resolves ref in it.
func (a *app) loadSchedule(ref string) (*model.Config, *model.Schedule, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	s, err := findSchedule(cfg, ref)
	return cfg, s, err
}

// nonNil makes empty results print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
