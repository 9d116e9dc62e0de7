package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func policies() *model.Policies {
	return &model.Policies{
		Tools: map[string]*model.Tool{
			"read":   {Name: "read", Kind: model.KindExec, Tier: model.TierReadOnly, Capabilities: []string{"notion.pages.read"}},
			"write":  {Name: "write", Kind: model.KindExec, Tier: model.TierLocalWrite, Capabilities: []string{"local.write"}},
			"send":   {Name: "send", Kind: model.KindExec, Tier: model.TierLocalWrite, Capabilities: []string{"outlook.send"}, RequiresApproval: true},
			"risky":  {Name: "risky", Kind: model.KindExec, Tier: model.TierReadOnly, RiskLevel: model.RiskHigh},
			"deploy": {Name: "deploy", Kind: model.KindExec, Tier: model.TierExternal, Capabilities: []string{"vercel.deploy"}},
		},
		TaskPolicies: []*model.TaskPolicy{
			{TaskType: "write", AutoExecute: false, MaxRiskLevel: model.RiskHigh, ApproverRole: "founder"},
			{TaskType: "write", Tenant: "demo", AutoExecute: true, MaxRiskLevel: model.RiskHigh},
			{TaskType: "risky", AutoExecute: true, MaxRiskLevel: model.RiskMedium},
		},
		Actors: []*model.Actor{
			{Pattern: "admin", Scopes: []string{"*"}, Autonomy: model.L3ExecuteSilent, RateLimit: model.RateLimit{PerMinute: 300}},
			{Pattern: "n8n_workflow_*", Scopes: []string{"notion.*", "local.write", "outlook.send"}, Autonomy: model.L2ExecuteNotify, RateLimit: model.RateLimit{PerMinute: 2, PerHour: 3}},
			{Pattern: "user_*", Scopes: []string{"notion.read"}, Autonomy: model.L1Draft},
		},
		Budget: model.GlobalBudget{DailyLimit: model.DefaultDailyLimit, MonthlyLimit: model.DefaultMonthlyLimit, OnLimitReached: model.PauseAll},
	}
}

func sched(tool, actor string, mut ...func(*model.Schedule)) *model.Schedule {
	s := &model.Schedule{ID: "s", Name: "s", TargetTool: tool, Actor: actor, PerDayBudget: 4, Autonomy: model.L3ExecuteSilent,
		Budget: model.TaskBudget{MaxCost: model.DefaultMaxCost}}
	s.SafetyTier = policies().Tools[tool].Tier
	for _, m := range mut {
		m(s)
	}
	return s
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		s      *model.Schedule
		st     func(*state.State)
		action Action
		reason string
		detail string
	}{
		{"tier 0 runs", sched("read", "admin"), nil, Run, "", ""},
		{"scope by prefix wildcard", sched("read", "n8n_workflow_7"), nil, Run, "", ""},
		{"scope denied, fail closed", sched("write", "user_bob"), nil, Skip, ledger.ReasonScopeDenied, "lacks scope for local.write"},
		{"user_* lacks notion.pages.read: notion.read is not a prefix", sched("read", "user_bob"), nil, Skip, ledger.ReasonScopeDenied, "notion.pages.read"},
		{"tool_deny refuses by capability", sched("read", "admin", func(s *model.Schedule) { s.ToolDeny = []string{"notion.*"} }), nil, Skip, ledger.ReasonToolDenied, `tool_deny "notion.*"`},
		{"tool_allow by name", sched("read", "admin", func(s *model.Schedule) { s.ToolAllow = []string{"re*"} }), nil, Run, "", ""},
		{"tool_allow without the tool", sched("read", "admin", func(s *model.Schedule) { s.ToolAllow = []string{"write"} }), nil, Skip, ledger.ReasonToolDenied, "not in tool_allow [write]"},
		{"unknown actor fails closed", sched("read", "robot"), nil, Skip, ledger.ReasonScopeDenied, "not defined"},
		{"tier 2 needs approval", sched("deploy", "admin"), nil, NeedApproval, ledger.ReasonApprovalPending, "safety tier 2"},
		{"global policy auto_execute false", sched("write", "admin"), nil, NeedApproval, ledger.ReasonApprovalPending, "task policy for write (global)"},
		{"tenant override beats global", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), nil, Run, "", ""},
		{"other tenant falls back to global", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "acme" }), nil, NeedApproval, "", "(global)"},
		{"tool requires approval", sched("send", "admin"), nil, NeedApproval, "", "tool send requires approval"},
		{"risk_level high forces approval at tier 0", sched("risky", "admin"), nil, NeedApproval, "", "tool risky has risk_level high"},
		{"L1 draft needs approval", sched("read", "admin", func(s *model.Schedule) { s.Autonomy = model.L1Draft }), nil, NeedApproval, "", "autonomy L1_Draft"},
		{"L0 ask needs approval", sched("read", "admin", func(s *model.Schedule) { s.Autonomy = model.L0Ask }), nil, NeedApproval, "", "autonomy L0_Ask"},
		{"per-day budget used", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo"; s.PerDayBudget = 2 }), func(st *state.State) {
			for i := range 2 {
				e := &ledger.Event{Event: ledger.RunCompleted, ScheduleID: "s", TS: now.Add(-time.Duration(i) * time.Hour), Tier: 1, Mode: ledger.ModeScheduled}
				st.Apply(e)
			}
		}, Skip, ledger.ReasonBudget, "2 of 2"},
		{"tier 0 ignores the per-day run count", sched("read", "admin", func(s *model.Schedule) { s.PerDayBudget = 1 }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "s", TS: now, Tier: 0})
		}, Run, "", ""},
		{"pause-all stops tier 0 that can spend", sched("read", "admin"), func(st *state.State) {
			st.Pauses["day"] = &state.Pause{Period: "day", Mode: model.PauseAll}
		}, Skip, ledger.ReasonPaused, "pause-all"},
		{"pause-all lets a free run go", sched("read", "admin", func(s *model.Schedule) { s.Budget.MaxCost = 0 }), func(st *state.State) {
			st.Pauses["day"] = &state.Pause{Period: "day", Mode: model.PauseAll}
		}, Run, "", ""},
		{"pause-all stops tier 1", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Pauses["day"] = &state.Pause{Period: "day", Mode: model.PauseAll}
		}, Skip, ledger.ReasonPaused, "pause-all"},
		{"a month pause holds", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Pauses["month"] = &state.Pause{Period: "month", Mode: model.PauseAll}
		}, Skip, ledger.ReasonPaused, "global month budget reached"},
		{"pause-non-critical lets critical run", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo"; s.Critical = true }), func(st *state.State) {
			st.Pauses["day"] = &state.Pause{Period: "day", Mode: model.PauseNonCritical}
		}, Run, "", ""},
		{"admission: the cap does not fit what is left", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 4*money.Dollar + money.Dollar*6/10}})
		}, Skip, ledger.ReasonBudget, "the day has $0.40 left of its $5.00 limit ($4.60 spent, $0.00 held by open claims)"},
		{"admission: a run that fits exactly", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 4*money.Dollar + money.Dollar/2}})
		}, Run, "", ""},
		{"admission: resumed today", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 6 * money.Dollar}})
			st.Apply(&ledger.Event{Event: ledger.BudgetResumed, Period: "day", TS: now})
		}, Run, "", ""},
		{"admission: a resume's ceiling", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 6 * money.Dollar}})
			st.Apply(&ledger.Event{Event: ledger.BudgetResumed, Period: "day", TS: now, Limit: 6*money.Dollar + money.Dollar/4})
		}, Skip, ledger.ReasonBudget, "the day has $0.25 left of its $6.25 limit"},
		{"admission: resumed until a time not yet come", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 6 * money.Dollar}})
			st.Apply(&ledger.Event{Event: ledger.BudgetResumed, Period: "day", TS: now, ExpiresAt: now.Add(time.Second)})
		}, Run, "", ""},
		{"admission: resumed until a time past", sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now.Add(-time.Hour), Usage: ledger.Usage{Cost: 6 * money.Dollar}})
			st.Apply(&ledger.Event{Event: ledger.BudgetResumed, Period: "day", TS: now.Add(-time.Hour), ExpiresAt: now})
		}, Skip, ledger.ReasonBudget, "the day has $0.00 left of its $5.00 limit"},
		{"rate limit per minute", sched("read", "n8n_workflow_7"), func(st *state.State) {
			for i := range 2 {
				st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "x", IdempotencyKey: "k" + string(rune('a'+i)), Actor: "n8n_workflow_7", TS: now.Add(-10 * time.Second)})
			}
		}, Skip, ledger.ReasonRateLimited, "in the last minute (limit 2)"},
		{"rate limit per hour", sched("read", "n8n_workflow_7"), func(st *state.State) {
			for i := range 3 {
				st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "x", IdempotencyKey: "k" + string(rune('a'+i)), Actor: "n8n_workflow_7", TS: now.Add(-30 * time.Minute)})
			}
		}, Skip, ledger.ReasonRateLimited, "in the last hour (limit 3)"},
		{"quarantined after a dead letter", sched("read", "admin", func(s *model.Schedule) { s.Quarantine = true }), func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunDeadLettered, ScheduleID: "s", IdempotencyKey: "s@x", TS: now})
		}, Skip, ledger.ReasonDeadLetter, "quarantined"},
		{"scope is checked before approval", sched("deploy", "user_x"), nil, Skip, ledger.ReasonScopeDenied, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := state.New(now)
			if c.st != nil {
				c.st(st)
			}
			d := Check(Input{Schedule: c.s, Policies: policies(), State: st, Now: now})
			if d.Action != c.action || (c.reason != "" && d.Reason != c.reason) || !strings.Contains(d.Detail, c.detail) {
				t.Fatalf("got %v %q %q, want %v %q containing %q", d.Action, d.Reason, d.Detail, c.action, c.reason, c.detail)
			}
		})
	}
}

// TestRateLimitSaysWhenToRetry: a run denied by a rate limit learns how
// many runs are left (none) and when the next may start: when the oldest
// run it must wait for leaves the window, whatever order the ledger holds
// the starts in.
func TestRateLimitSaysWhenToRetry(t *testing.T) {
	st := state.New(now)
	for i, ago := range []time.Duration{5 * time.Minute, 50 * time.Minute, 20 * time.Minute, 2 * time.Hour} {
		st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "x", IdempotencyKey: "k" + string(rune('a'+i)), Actor: "n8n_workflow_7", TS: now.Add(-ago)})
	}
	d := Check(Input{Schedule: sched("read", "n8n_workflow_7"), Policies: policies(), State: st, Now: now})
	rl := d.RateLimit
	// Three runs in the hour, limit 3: one more may start when the one
	// 50 minutes ago is an hour old.
	if d.Action != Skip || rl == nil || rl.Window != "hour" || rl.Limit != 3 || rl.Remaining != 0 || !rl.ResetAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("%v %q %+v", d.Action, d.Detail, rl)
	}
	if want := "0 left, the next may start at " + now.Add(10*time.Minute).Format(time.RFC3339); !strings.Contains(d.Detail, want) {
		t.Fatalf("detail %q lacks %q", d.Detail, want)
	}
	if d := Check(Input{Schedule: sched("read", "n8n_workflow_7"), Policies: policies(), State: st, Now: rl.ResetAt}); d.Action != Run {
		t.Fatalf("at the reset time: %v %q", d.Action, d.Detail)
	}
}

// TestStrictestWins: every rule that asks for an approval is listed.
func TestStrictestWins(t *testing.T) {
	p := policies()
	s := sched("send", "admin", func(s *model.Schedule) { s.SafetyTier = model.TierExternal; s.Autonomy = model.L0Ask })
	got := p.ApprovalReasons(s, p.Tools["send"])
	if len(got) != 3 {
		t.Fatalf("reasons %v", got)
	}
	d := Check(Input{Schedule: sched("write", "admin"), Policies: p, State: state.New(now), Now: now})
	if d.ApproverRole != "founder" {
		t.Fatalf("approver role %q", d.ApproverRole)
	}
}

// Every open claim in the ledger holds its cap, whichever runner made it:
// a run that would fit the spend alone does not fit beside them. A claim
// past its deadline holds nothing; a run's own claim counts once.
func TestAdmitCountsOpenClaims(t *testing.T) {
	st := state.New(now)
	st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: "o@1", TS: now, Usage: ledger.Usage{Cost: 3 * money.Dollar}})
	in := Input{Schedule: sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo" }), Policies: policies(), State: st, Now: now}
	if _, refused := Admit(in); refused {
		t.Fatal("refused with nothing claimed")
	}
	// Another runner's claim of $2.00, live until 10 minutes from now.
	st.Apply(&ledger.Event{Event: ledger.RunClaimed, Status: ledger.StatusClaimed, ScheduleID: "x", IdempotencyKey: "x@1", Runner: "other", TS: now,
		Tier: 1, Limit: 2 * money.Dollar, ExpiresAt: now.Add(10 * time.Minute)})
	d, refused := Admit(in)
	if !refused || !strings.Contains(d.Detail, "$3.00 spent, $2.00 held by open claims") {
		t.Fatalf("beside another runner's claim: %v %q", refused, d.Detail)
	}
	in.State.Now = now.Add(10 * time.Minute) // past its deadline: its runner is gone
	if d, refused := Admit(in); refused {
		t.Fatalf("an expired claim held the budget: %q", d.Detail)
	}
}
