// Package introspect answers questions about past runs from the ledger:
// the tier-0 tools tasks_list, tasks_by_trace and tasks_last_failed,
// and the budget report. The CLI and the builtin tools share it.
package introspect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

// Task is one attempt at a slot, or one skipped slot, as the ledger tells it.
type Task struct {
	RunID      string       `json:"run_id"`
	ScheduleID string       `json:"schedule_id"`
	Key        string       `json:"idempotency_key"`
	Slot       time.Time    `json:"slot,omitzero"`
	Status     string       `json:"status"` // running, completed, failed, skipped, rolled_back
	Reason     string       `json:"reason,omitempty"`
	Started    time.Time    `json:"started"`
	Ended      time.Time    `json:"ended,omitzero"`
	Attempt    int          `json:"attempt"`
	Mode       string       `json:"scheduled_vs_manual"`
	Actor      string       `json:"actor"`
	Tenant     string       `json:"tenant,omitempty"`
	Tool       string       `json:"tool"`
	Tier       int          `json:"tier"`
	TraceID    string       `json:"trace_id,omitempty"`
	Usage      ledger.Usage `json:"usage,omitzero"`
	Error      string       `json:"error,omitempty"`
	Output     string       `json:"output,omitempty"`
	// Approval is who approved the run and what they said, when the
	// approval is in the same ledger file as the run's claim.
	Approval string `json:"approval,omitempty"`
}

// Query selects tasks.
type Query struct {
	Schedule string    // id
	Actor    string    // runs as this actor
	Tenant   string    // runs of schedules of this tenant
	Status   string    // running, completed, failed, skipped, rolled_back, all; "" = runs (not skips)
	Since    time.Time // earliest event time read; zero: the current month
	TraceID  string
	Limit    int  // newest first; 0 = all
	Output   bool // read the tools' output too (Task.Output)
}

// Tasks lists tasks matching q, newest first (see Each), at most q.Limit
// of them when it is set.
func Tasks(store *ledger.Store, now time.Time, q Query) ([]Task, error) {
	var out []Task
	err := Each(store, now, q, func(t *Task) bool {
		out = append(out, *t)
		return q.Limit <= 0 || len(out) < q.Limit
	})
	return out, err
}

// matches reports whether e is about a task q asks for.
func (q Query) matches(e *ledger.Event) bool {
	switch {
	case e.IdempotencyKey == "":
		return false
	case q.TraceID != "" && e.TraceID != q.TraceID:
		return false
	case q.Schedule != "" && e.ScheduleID != q.Schedule, q.Actor != "" && e.Actor != q.Actor, q.Tenant != "" && e.Tenant != q.Tenant:
		return false
	}
	return true
}

// wants reports whether q asks for tasks of status.
func (q Query) wants(status string) bool {
	switch q.Status {
	case "all":
		return true
	case "":
		return status != "skipped"
	}
	return status == q.Status
}

func fromEvent(e *ledger.Event) Task {
	return Task{RunID: e.RunID(), ScheduleID: e.ScheduleID, Key: e.IdempotencyKey, Slot: e.Slot, Started: e.TS,
		Attempt: max(e.Attempt, 1), Mode: e.Mode, Actor: e.Actor, Tenant: e.Tenant, Tool: e.Tool, Tier: e.Tier, TraceID: e.TraceID}
}

// ByTrace lists every task of one trace (a run, its retries and chained
// steps), oldest first, looking back a month and a half; with output,
// the tools' output too.
func ByTrace(store *ledger.Store, now time.Time, traceID string, output bool) ([]Task, error) {
	ts, err := Tasks(store, now, Query{TraceID: traceID, Status: "all", Since: now.AddDate(0, 0, -TraceDays), Output: output})
	slices.Reverse(ts)
	return ts, err
}

// LastFailed lists the most recent failures, the tool tasks_last_failed.
func LastFailed(store *ledger.Store, now time.Time, limit int, output bool) ([]Task, error) {
	return Tasks(store, now, Query{Status: "failed", Limit: limit, Since: now.AddDate(0, 0, -FailedDays), Output: output})
}

// How far back ByTrace and LastFailed look, in days.
const (
	TraceDays  = 45
	FailedDays = 31
)

// ScheduleBudget is the per-day run budget of one schedule, today.
type ScheduleBudget struct {
	ScheduleID string `json:"schedule_id"`
	Name       string `json:"name"`
	Tier       int    `json:"tier"`
	PerDay     int    `json:"per_day"`  // 0: not budget-limited
	Consumed   int    `json:"consumed"` // successful runs today (and live claims)
	Left       int    `json:"left"`
	LastReset  string `json:"last_reset"` // the UTC day the count is for
}

// Period is one budget period's spend against its limit.
type Period struct {
	Name     string    `json:"period"` // day | month
	Spent    money.USD `json:"spent_usd"`
	Reserved money.USD `json:"reserved_usd"` // cost caps of open claims (every runner's) before their deadlines
	Limit    money.USD `json:"limit_usd"`    // 0: no limit
	Tokens   int64     `json:"tokens"`
	Paused   string    `json:"paused,omitempty"` // "since <time> (<mode>)" while paused
	Resumed  bool      `json:"resumed,omitempty"`
	// A resume's bound: the ceiling for the rest of the period, or no
	// limit until ResumedUntil.
	Ceiling      money.USD `json:"ceiling_usd,omitempty"`
	ResumedUntil time.Time `json:"resumed_until,omitzero"`
}

// Left is what the period can still admit: its limit (a resume's ceiling)
// less spent and reserved.
func (p Period) Left() money.USD {
	limit := p.Limit
	if p.Ceiling > 0 {
		limit = p.Ceiling
	}
	return max(limit.Add(-p.Spent.Add(p.Reserved)), 0)
}

// GlobalBudget is spend against the day's and the month's limits.
type GlobalBudget struct {
	Day             Period    `json:"day"`
	Month           Period    `json:"month"`
	AlertLevel      float64   `json:"alert_level"` // highest threshold reached in either period, 0 if none
	OnLimitReached  string    `json:"on_limit_reached"`
	AlertThresholds []float64 `json:"alert_thresholds"`
}

// Paused says which periods are paused, "" when none.
func (g GlobalBudget) Paused() string {
	var out []string
	for _, p := range []Period{g.Day, g.Month} {
		if p.Paused != "" {
			out = append(out, p.Name+" "+p.Paused)
		}
	}
	return strings.Join(out, "; ")
}

// Budget is the report of `astra budget` and the builtin budget tool.
type Budget struct {
	Day       string           `json:"day"`
	Global    GlobalBudget     `json:"global"`
	Schedules []ScheduleBudget `json:"schedules"`
}

// BudgetReport computes budget use at st.Now.
func BudgetReport(cfg *model.Config, st *state.State) Budget {
	b := cfg.Policies.Budget
	period := func(name string, limit money.USD, tokens int64) Period {
		p := Period{Name: name, Spent: st.Spent(name), Reserved: st.Reserved(name), Limit: limit, Tokens: tokens}
		if r := st.ResumedIn(name); r != nil {
			p.Resumed, p.Ceiling = true, r.Ceiling
			if st.Now.Before(r.Until) {
				p.ResumedUntil = r.Until
			}
		}
		if pz := st.Pauses[name]; pz != nil {
			p.Paused = fmt.Sprintf("since %s (%s)", pz.Since.Format(time.RFC3339), pz.Mode)
		}
		return p
	}
	g := GlobalBudget{Day: period("day", b.DailyLimit, st.Spend.DayTokens), Month: period("month", b.MonthlyLimit, st.Spend.MonthTokens),
		OnLimitReached: b.OnLimitReached, AlertThresholds: b.AlertThresholds}
	for _, th := range append(append([]float64(nil), b.AlertThresholds...), 1) {
		for _, p := range []Period{g.Day, g.Month} {
			if p.Limit > 0 && p.Spent.Float() >= th*p.Limit.Float() {
				g.AlertLevel = th
			}
		}
	}
	out := Budget{Day: state.Day(st.Now), Global: g}
	for _, sc := range cfg.Schedules {
		sb := ScheduleBudget{ScheduleID: sc.ID, Name: sc.Name, Tier: int(sc.SafetyTier), LastReset: state.Day(st.Now)}
		if sc.SafetyTier >= model.TierLocalWrite {
			sb.PerDay = sc.PerDayBudget
			sb.Consumed = st.ConsumedToday(sc.ID)
			sb.Left = max(0, sb.PerDay-sb.Consumed)
		}
		out.Schedules = append(out.Schedules, sb)
	}
	return out
}

// Text renders tasks for a builtin tool's output: one line each.
func Text(ts []Task) string {
	if len(ts) == 0 {
		return "no tasks\n"
	}
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s %-9s %s %s", t.Started.Format(time.RFC3339), t.Status, t.RunID, t.Tool)
		if t.Reason != "" {
			fmt.Fprintf(&b, " (%s)", t.Reason)
		}
		if t.Error != "" {
			fmt.Fprintf(&b, ": %s", t.Error)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
