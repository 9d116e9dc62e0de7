package config

import (
	"errors"
	"time"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// resolve fills in defaults (exactly as the seeds give them) and derived
// fields: ids, the cron spec, the time zone, the effective tier and autonomy.
// It reports problems that make a value impossible to derive.
func resolve(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	for name, b := range model.BuiltinTools() {
		if t, ok := p.Tools[name]; ok {
			if t.Kind != model.KindBuiltin {
				diags.Errorf(t.Meta.At("kind"), "pick another name for your tool", "%q is a builtin tool name; its kind must be builtin", name)
			}
			continue
		}
		p.Tools[name] = b
	}
	for _, t := range p.Tools {
		if t.Kind == model.KindHTTP && t.Method == "" {
			t.Method = "POST"
		}
	}
	resolveBudget(&p.Budget)
	for _, a := range p.Actors {
		if !a.RateLimit.Meta.Has("per_minute") {
			a.RateLimit.PerMinute = model.DefaultRatePerMinute
		}
		if !a.Meta.Has("autonomy") {
			a.Autonomy = model.L2ExecuteNotify // the default autonomy when no tool needs approval
		}
	}
	for _, tp := range p.TaskPolicies {
		if !tp.Meta.Has("auto_execute") {
			tp.AutoExecute = true
		}
		if !tp.Meta.Has("max_risk_level") {
			tp.MaxRiskLevel = model.RiskHigh
		}
	}
	for _, s := range cfg.Schedules {
		resolveSchedule(s, p, diags)
	}
}

func resolveBudget(b *model.GlobalBudget) {
	if !b.Meta.Has("daily_limit_usd") {
		b.DailyLimit = model.DefaultDailyLimit
	}
	if !b.Meta.Has("monthly_limit_usd") {
		b.MonthlyLimit = model.DefaultMonthlyLimit
	}
	if !b.Meta.Has("alert_thresholds") {
		b.AlertThresholds = append([]float64(nil), model.DefaultAlertThresholds...)
	}
	if !b.Meta.Has("on_limit_reached") {
		b.OnLimitReached = model.PauseAll
	}
}

// resolveSchedule fills in one schedule's defaults and derived fields.
// The zone comes before the trigger (cron reads its fields in it) and the
// tier before the per-day budget and autonomy (both depend on it).
func resolveSchedule(s *model.Schedule, p *model.Policies, diags *diag.List) {
	resolveScheduleDefaults(s)
	resolveZone(s, diags)
	resolveTrigger(s, diags)
	resolveTier(s, p.Tools[s.TargetTool])
	resolveAutonomy(s, p.Actor(s.Actor))
	resolveRunBudget(&s.Budget)
	resolveRetry(&s.Retry)
	resolveCatchup(&s.Catchup)
	if s.ResultRoute.Type == "" {
		s.ResultRoute.Type = model.RouteSilent
	}
	if !s.Meta.Has("approval_ttl") {
		s.ApprovalTTL = model.Duration(model.DefaultApprovalTTL)
	}
}

// resolveScheduleDefaults derives the id and type and defaults what
// needs nothing else.
func resolveScheduleDefaults(s *model.Schedule) {
	m := s.Meta
	if s.ID == "" && s.Name != "" {
		s.ID = model.DeriveID(s.Tenant, s.Name)
	}
	if s.Type == "" {
		s.Type = s.TargetTool
	}
	if !m.Has("enabled") {
		s.Enabled = true
	}
	if !m.Has("priority") {
		s.Priority = model.DefaultPriority
	}
	if s.Actor == "" {
		s.Actor = model.DefaultActor
	}
}

// resolveZone loads the schedule's time zone (UTC by default, and when
// the name is unknown, which is reported).
func resolveZone(s *model.Schedule, diags *diag.List) {
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		diags.Errorf(s.Meta.At("timezone"), "use an IANA zone name such as Europe/Berlin or America/New_York", "unknown time zone %q", s.Timezone)
		loc = time.UTC
	}
	s.Loc = loc
}

// resolveTier defaults the safety tier to the tool's (nil: unknown) and
// a tier-1 schedule's per-day budget.
func resolveTier(s *model.Schedule, tool *model.Tool) {
	m := s.Meta
	if !m.Has("safety_tier") {
		s.SafetyTier = model.TierExternal // fail closed when the tool is unknown
		if tool != nil {
			s.SafetyTier = tool.Tier
		}
	}
	if !m.Has("per_day_budget") && s.SafetyTier == model.TierLocalWrite {
		s.PerDayBudget = model.DefaultPerDayBudget
	}
}

// resolveAutonomy makes the strictest of the schedule's own level and the
// actor's default win (nil: no actor matches, L0).
func resolveAutonomy(s *model.Schedule, actor *model.Actor) {
	actorLevel := model.L0Ask
	if actor != nil {
		actorLevel = actor.Autonomy
	}
	if !s.Meta.Has("autonomy") || s.Autonomy > actorLevel {
		s.Autonomy = actorLevel
	}
}

func resolveRunBudget(b *model.TaskBudget) {
	if !b.Meta.Has("max_tokens") {
		b.MaxTokens = model.DefaultMaxTokens
	}
	if !b.Meta.Has("max_cost_usd") {
		b.MaxCost = model.DefaultMaxCost
	}
	if !b.Meta.Has("max_wall_clock") {
		b.MaxWallClock = model.Duration(model.DefaultMaxWallClock)
	}
	if !b.Meta.Has("max_tool_calls") {
		b.MaxToolCalls = model.DefaultMaxToolCalls
	}
}

func resolveRetry(r *model.Retry) {
	if !r.Meta.Has("max_attempts") {
		r.MaxAttempts = model.DefaultRetryAttempts
	}
	if !r.Meta.Has("backoff_base") {
		r.BackoffBase = model.Duration(model.DefaultBackoffBase)
	}
	if !r.Meta.Has("backoff_max") {
		r.BackoffMax = model.Duration(model.DefaultBackoffMax)
	}
}

// resolveCatchup defaults the policy, then the window (shorter for skip)
// and the bound on slots.
func resolveCatchup(c *model.Catchup) {
	if c.Policy == "" {
		c.Policy = model.CatchupLatest
	}
	if !c.Meta.Has("window") {
		c.Window = model.Duration(model.DefaultCatchupWindow)
		if c.Policy == model.CatchupSkip {
			c.Window = model.Duration(model.DefaultSkipWindow)
		}
	}
	if !c.Meta.Has("max") {
		c.Max = model.DefaultCatchupMax
	}
}

// resolveTrigger parses the one time trigger a schedule may have.
func resolveTrigger(s *model.Schedule, diags *diag.List) {
	m := s.Meta
	var set []string
	for _, k := range []string{"cron", "frequency", "interval", "at", "on_event"} {
		if m.Has(k) {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		diags.Errorf(m.At(set[1]), "keep one of them", "%s and %s are both set; a schedule has one trigger", set[0], set[1])
		return
	}
	expr, key := s.Cron, "cron"
	switch {
	case m.Has("frequency"):
		e, err := cron.Frequency(s.Frequency)
		if err != nil {
			diags.Errorf(m.At("frequency"), "use hourly, daily, weekly or monthly, or write a cron expression", "%v", err)
			return
		}
		expr, key = e, "frequency"
	case m.Has("interval"):
		spec, err := cron.Every(s.Interval.D())
		if err != nil {
			diags.Errorf(m.At("interval"), "", "%v", err)
			return
		}
		s.Spec = spec
		return
	case m.Has("at"):
		t, _, err := parseWhen(s.At, s.Loc)
		if err != nil {
			diags.Errorf(m.At("at"), "write an RFC 3339 time such as 2026-12-24T18:00:00Z, or a date such as 2026-12-24", "at: %v", err)
			return
		}
		s.Spec = cron.At(t.In(s.Loc))
		return
	case !m.Has("cron"):
		return
	}
	spec, err := cron.Parse(expr, s.Loc)
	if err != nil {
		pos := m.At(key)
		var ce *cron.Error
		if key == "cron" && errors.As(err, &ce) {
			pos.Col += ce.Offset
		}
		diags.Errorf(pos, "see `man 5 crontab`", "%v", err)
		return
	}
	s.Spec = spec
	if why := spec.Never(); why != "" {
		diags.Warnf(m.At(key), "it will never be due; check the day-of-month and month fields", "cron %q never fires: %s", expr, why)
	}
}
