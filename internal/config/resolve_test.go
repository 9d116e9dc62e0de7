package config

import (
	"testing"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// meta says which keys a schedule wrote.
func meta(keys ...string) model.Meta {
	m := model.Meta{Keys: map[string]diag.Pos{}}
	for _, k := range keys {
		m.Keys[k] = diag.Pos{File: "schedules/s.yaml", Line: 1}
	}
	return m
}

// The strictest of the schedule's own autonomy and its actor's default
// wins; without a matching actor, L0 (fail closed).
func TestResolveAutonomyStrictestWins(t *testing.T) {
	actor := &model.Actor{Pattern: "bot", Autonomy: model.L2ExecuteNotify}
	for _, c := range []struct {
		name    string
		written bool // the schedule wrote autonomy: own
		own     model.Autonomy
		actor   *model.Actor
		want    model.Autonomy
	}{
		{"actor's default", false, 0, actor, model.L2ExecuteNotify},
		{"stricter schedule", true, model.L1Draft, actor, model.L1Draft},
		{"laxer schedule", true, model.L3ExecuteSilent, actor, model.L2ExecuteNotify},
		{"same", true, model.L2ExecuteNotify, actor, model.L2ExecuteNotify},
		{"no actor", false, 0, nil, model.L0Ask},
		{"no actor, laxer schedule", true, model.L3ExecuteSilent, nil, model.L0Ask},
	} {
		s := &model.Schedule{Meta: meta()}
		if c.written {
			s.Meta, s.Autonomy = meta("autonomy"), c.own
		}
		resolveAutonomy(s, c.actor)
		if s.Autonomy != c.want {
			t.Errorf("%s: %s, want %s", c.name, s.Autonomy, c.want)
		}
	}
}

// The tier defaults to the tool's, external when the tool is unknown; a
// tier-1 schedule gets the default per-day budget unless it wrote one.
func TestResolveTier(t *testing.T) {
	tool := &model.Tool{Name: "t", Tier: model.TierLocalWrite}
	for _, c := range []struct {
		name       string
		s          *model.Schedule
		tool       *model.Tool
		tier       model.Tier
		perDay     int
		wantPerDay int
	}{
		{"the tool's", &model.Schedule{Meta: meta()}, tool, model.TierLocalWrite, 0, model.DefaultPerDayBudget},
		{"unknown tool", &model.Schedule{Meta: meta()}, nil, model.TierExternal, 0, 0},
		{"its own", &model.Schedule{Meta: meta("safety_tier"), SafetyTier: model.TierExternal}, tool, model.TierExternal, 0, 0},
		{"its own budget", &model.Schedule{Meta: meta("per_day_budget"), PerDayBudget: 9}, tool, model.TierLocalWrite, 9, 9},
	} {
		resolveTier(c.s, c.tool)
		if c.s.SafetyTier != c.tier || c.s.PerDayBudget != c.wantPerDay {
			t.Errorf("%s: tier %s, per day %d; want %s, %d", c.name, c.s.SafetyTier, c.s.PerDayBudget, c.tier, c.wantPerDay)
		}
	}
}

// Under catch-up policy skip, a slot may be only a little late by default.
func TestResolveCatchupWindow(t *testing.T) {
	for policy, want := range map[string]model.Duration{
		"":                  model.Duration(model.DefaultCatchupWindow),
		model.CatchupAll:    model.Duration(model.DefaultCatchupWindow),
		model.CatchupSkip:   model.Duration(model.DefaultSkipWindow),
		model.CatchupLatest: model.Duration(model.DefaultCatchupWindow),
	} {
		c := model.Catchup{Meta: meta(), Policy: policy}
		resolveCatchup(&c)
		if c.Window != want || c.Max != model.DefaultCatchupMax || c.Policy == "" {
			t.Errorf("policy %q: %+v", policy, c)
		}
	}
	c := model.Catchup{Meta: meta("window"), Policy: model.CatchupSkip, Window: model.Duration(model.DefaultCatchupWindow)}
	if resolveCatchup(&c); c.Window != model.Duration(model.DefaultCatchupWindow) {
		t.Errorf("a written window stays: %v", c.Window)
	}
}
