package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/model"
)

func (a *app) schedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List schedules and their next run times",
		Example: `  astra schedules list
  astra schedules next --count 3`,
	}
	cmd.AddCommand(a.schedulesListCmd(), a.schedulesNextCmd())
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
}

// trigger describes when a schedule fires, for tables.
func trigger(s *model.Schedule) string {
	var parts []string
	if s.Spec != nil {
		parts = append(parts, s.Spec.String())
	}
	if s.OnEvent != "" {
		parts = append(parts, "on "+s.OnEvent)
	}
	if s.RunImmediately {
		parts = append(parts, "immediately")
	}
	return strings.Join(parts, ", ")
}

func (a *app) schedulesListCmd() *cobra.Command {
	var tenant, typ string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the schedules astra knows, with their resolved settings",
		Example: `  astra schedules list
  astra schedules list --tenant-id acme --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			var rows []scheduleJSON
			for _, s := range cfg.Schedules {
				if (tenant != "" && s.Tenant != tenant) || (typ != "" && s.Type != typ) {
					continue
				}
				rows = append(rows, scheduleJSON{
					ID: s.ID, Name: s.Name, Type: s.Type, Tenant: s.Tenant, Trigger: trigger(s),
					Timezone: s.Timezone, Tool: s.TargetTool, Tier: int(s.SafetyTier), Autonomy: s.Autonomy.Short(),
					Actor: s.Actor, Priority: s.Priority, Enabled: s.Enabled, PerDay: s.PerDayBudget,
					Source: s.Meta.Pos.String(), ResultRoute: s.ResultRoute.Type,
				})
			}
			return printRows(a, rows, "", "ID\tNAME\tTRIGGER\tTZ\tTOOL\tTIER\tAUTONOMY\tACTOR\tENABLED", func(r scheduleJSON) string {
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%v", r.ID, r.Name, r.Trigger, r.Timezone, r.Tool, r.Tier, r.Autonomy, r.Actor, r.Enabled)
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant-id", "", "only schedules of this tenant")
	cmd.Flags().StringVar(&typ, "schedule-type", "", "only schedules of this type")
	return cmd
}

func (a *app) schedulesNextCmd() *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "next [schedule...]",
		Short: "Show the next fire times of time-triggered schedules",
		Long: `next prints the next fire times after --now (default: the wall clock) of
each enabled time-triggered schedule, or of the schedules named by id or name.
Times are shown in UTC and in the schedule's own time zone.`,
		Example: `  astra schedules next
  astra schedules next --count 5 morning_health_check
  astra schedules next --now 2026-03-29T00:00:00Z --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return usageErrorf("--count must be at least 1")
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			selected, err := selectSchedules(cfg, args)
			if err != nil {
				return err
			}
			type nextJSON struct {
				ID       string      `json:"id"`
				Name     string      `json:"name"`
				Trigger  string      `json:"trigger"`
				Timezone string      `json:"timezone"`
				Next     []time.Time `json:"next"`
			}
			now := a.now()
			var out []nextJSON
			for _, s := range selected {
				if s.Spec == nil || (!s.Enabled && len(args) == 0) {
					continue
				}
				n := nextJSON{ID: s.ID, Name: s.Name, Trigger: trigger(s), Timezone: s.Timezone, Next: []time.Time{}}
				t := now
				for range count {
					t = s.Spec.Next(t)
					if t.IsZero() {
						break
					}
					n.Next = append(n.Next, t)
				}
				out = append(out, n)
			}
			// One line per fire time; the schedule is named on its first.
			return printRows(a, out, "", "ID\tNAME\tTRIGGER\tNEXT (UTC)\tLOCAL", func(n nextJSON) string {
				loc, _ := time.LoadLocation(n.Timezone)
				lines := make([]string, len(n.Next))
				for i, t := range n.Next {
					id, name, trig := n.ID, n.Name, n.Trigger
					if i > 0 {
						id, name, trig = "", "", ""
					}
					lines[i] = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", id, name, trig, t.UTC().Format(time.RFC3339), t.In(loc).Format("Mon 2006-01-02 15:04 MST"))
				}
				return strings.Join(lines, "\n")
			})
		},
	}
	cmd.Flags().IntVar(&count, "count", 1, "how many fire times per schedule")
	return cmd
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
	return nil, usageErrorf("no schedule with id or name %q (see `astra schedules list`)", ref)
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
