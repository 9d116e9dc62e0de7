package config

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// A schedule's own keys win over its template's, the template's over the
// policies defaults, those over astra's; nested mappings merge key by key
// and filling one schedule leaves the template and its other users alone.
func TestTemplatesAndDefaults(t *testing.T) {
	a := &txtar.Archive{Files: []txtar.File{
		{Name: "schedules/a.yaml", Data: []byte(`schedules:
  - name: own
    cron: "0 6 * * *"
    target_tool: noop
    extends: nightly
    timezone: Asia/Tokyo
    budget: {max_tokens: 7}
  - name: plain
    cron: "0 6 * * *"
    target_tool: noop
    extends: nightly
  - name: bare
    cron: "0 6 * * *"
    target_tool: noop
`)},
		{Name: "policies/p.yaml", Data: []byte(`tools:
  noop: {kind: exec, command: [echo], tier: read_only}
actors:
  - {actor: astra, scopes: ["*"]}
  - {actor: bot, scopes: ["*"]}
defaults:
  timezone: Europe/Berlin
  actor: bot
  budget: {max_tokens: 1000, max_tool_calls: 2}
  retry: {max_attempts: 5}
  catchup: {policy: all}
templates:
  nightly:
    timezone: America/New_York
    budget: {max_tokens: 500}
    retry: {max_attempts: 1}
    result_route: notify
`)},
	}}
	cfg, diags, err := Load(writeArchive(t, a))
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("load: %v %v", err, diags)
	}
	own, plain, bare := cfg.Schedules[0], cfg.Schedules[1], cfg.Schedules[2]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"own timezone", own.Timezone, "Asia/Tokyo"},
		{"own max_tokens", own.Budget.MaxTokens, int64(7)},
		{"own max_tool_calls from defaults", own.Budget.MaxToolCalls, int64(2)},
		{"own wall clock from astra", own.Budget.MaxWallClock.D().String(), "5m0s"},
		{"own retry from template", own.Retry.MaxAttempts, 1},
		{"own route from template", own.ResultRoute.Type, model.RouteNotify},
		{"plain timezone from template", plain.Timezone, "America/New_York"},
		{"plain max_tokens from template", plain.Budget.MaxTokens, int64(500)},
		{"plain max_tool_calls from defaults", plain.Budget.MaxToolCalls, int64(2)},
		{"plain actor from defaults", plain.Actor, "bot"},
		{"plain catchup from defaults", plain.Catchup.Policy, model.CatchupAll},
		{"bare timezone from defaults", bare.Timezone, "Europe/Berlin"},
		{"bare retry from defaults", bare.Retry.MaxAttempts, 5},
		{"bare max_tokens from defaults", bare.Budget.MaxTokens, int64(1000)},
		{"bare route from astra", bare.ResultRoute.Type, model.RouteSilent},
		{"template untouched", cfg.Policies.Templates["nightly"].Budget.Meta.Has("max_tool_calls"), false},
		{"taken key keeps its position", plain.Meta.At("timezone").File, "policies/p.yaml"},
		{"own key keeps its position", own.Meta.At("timezone").File, "schedules/a.yaml"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got := plain.Loc.String(); got != "America/New_York" {
		t.Errorf("plain zone = %s: the cron must be read in the template's zone", got)
	}
}

// defaults.cancel_poll is 30s unless written; 0 turns it off; a negative
// one is refused where it is written (as every duration is).
func TestCancelPoll(t *testing.T) {
	load := func(defaults string) (*model.Config, string) {
		a := &txtar.Archive{Files: []txtar.File{
			{Name: "schedules/a.yaml", Data: []byte("schedules:\n  - {name: a, cron: \"0 6 * * *\", target_tool: noop}\n")},
			{Name: "policies/p.yaml", Data: []byte("tools:\n  noop: {kind: exec, command: [echo], tier: read_only}\nactors:\n  - {actor: astra, scopes: [\"*\"]}\n" + defaults)},
		}}
		cfg, diags, err := Load(writeArchive(t, a))
		if err != nil {
			t.Fatal(err)
		}
		if diags.Errors() == 0 {
			return cfg, ""
		}
		return cfg, diag.ListError(diags).Error()
	}
	for _, c := range []struct {
		defaults string
		want     time.Duration
	}{{"", 30 * time.Second}, {"defaults: {cancel_poll: 1s}\n", time.Second}, {"defaults: {cancel_poll: 0s}\n", 0}} {
		cfg, diags := load(c.defaults)
		if got := cfg.Policies.Defaults.CancelPollD(); got != c.want || diags != "" {
			t.Errorf("%q: cancel poll %v, want %v (%s)", c.defaults, got, c.want, diags)
		}
	}
	if _, diags := load("defaults:\n  cancel_poll: 10ms\n"); !strings.Contains(diags, "p.yaml:6") || !strings.Contains(diags, "cancel_poll must be at least 1s, or 0") {
		t.Errorf("a cancel_poll under a second: %s", diags)
	}
	if _, diags := load("defaults:\n  cancel_poll: -1s\n"); !strings.Contains(diags, "p.yaml:6") || !strings.Contains(diags, `"cancel_poll": duration "-1s" is negative`) {
		t.Errorf("a negative cancel_poll: %s", diags)
	}
}
