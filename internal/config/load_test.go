package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
)

// basePolicies is added to invalid examples that bring no policies of their
// own, so each example shows only its one problem.
const basePolicies = `tools:
  noop:
    kind: exec
    command: [echo, ok]
    tier: read_only
actors:
  - actor: astra
    scopes: ["*"]
`

func writeArchive(t *testing.T, a *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	hasPolicies := false
	for _, f := range a.Files {
		if f.Name == "want" {
			continue
		}
		hasPolicies = hasPolicies || strings.HasPrefix(f.Name, "policies/")
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !hasPolicies {
		if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "policies", "base.yaml"), []byte(basePolicies), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInvalidExamples loads each testdata/invalid/*.txtar and expects exactly
// the error diagnostics listed in its want section (each a prefix of one
// diagnostic, in order).
func TestInvalidExamples(t *testing.T) {
	files, err := filepath.Glob("../../testdata/invalid/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid examples found: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, f := range a.Files {
				if f.Name == "want" {
					want = strings.Split(strings.TrimSpace(string(f.Data)), "\n")
				}
			}
			_, diags, err := Load(writeArchive(t, a))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range diags {
				if d.Severity == 0 {
					got = append(got, d.String())
				}
			}
			if len(got) != len(want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("error %d:\n got  %s\n want %s...", i, got[i], want[i])
				}
			}
		})
	}
}

// TestBundledExamples: the repository's own schedules and policies are the
// documentation's examples; they must load with no error and no warning.
func TestBundledExamples(t *testing.T) {
	cfg, diags, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diags {
		t.Errorf("%s", d)
	}
	if len(cfg.Schedules) < 10 {
		t.Fatalf("expected the bundled examples, got %d schedules", len(cfg.Schedules))
	}
	for _, name := range []string{"morning_health_check", "autonomous_coding", "production_deploy"} {
		if cfg.Schedule(name) == nil {
			t.Errorf("example schedule %q missing", name)
		}
	}
}

func TestDefaults(t *testing.T) {
	a := &txtar.Archive{Files: []txtar.File{
		{Name: "schedules/a.yaml", Data: []byte("name: a\ncron: \"0 */4 * * *\"\ntarget_tool: write\n")},
		{Name: "policies/p.yaml", Data: []byte(`tools:
  write: {kind: exec, command: [echo], tier: local_write}
actors:
  - {actor: astra, scopes: ["*"]}
`)},
	}}
	cfg, diags, err := Load(writeArchive(t, a))
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("load: %v %v", err, diags)
	}
	s := cfg.Schedules[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"id", s.ID, model.DeriveID("", "a")},
		{"type", s.Type, "write"},
		{"tier from tool", s.SafetyTier, model.TierLocalWrite},
		{"per_day_budget", s.PerDayBudget, 4},
		{"enabled", s.Enabled, true},
		{"priority", s.Priority, 5},
		{"actor", s.Actor, "astra"},
		{"autonomy from actor", s.Autonomy, model.L2ExecuteNotify},
		{"max_tokens", s.Budget.MaxTokens, int64(50000)},
		{"max_cost_usd", s.Budget.MaxCost, money.Dollar / 2},
		{"max_wall_clock", s.Budget.MaxWallClock.D().String(), "5m0s"},
		{"max_tool_calls", s.Budget.MaxToolCalls, int64(10)},
		{"retry attempts", s.Retry.MaxAttempts, 3},
		{"backoff base", s.Retry.BackoffBase.D().String(), "5s"},
		{"backoff max", s.Retry.BackoffMax.D().String(), "5m0s"},
		{"catchup", s.Catchup.Policy, "latest"},
		{"route", s.ResultRoute.Type, "silent"},
		{"timezone", s.Timezone, "UTC"},
		{"daily limit", cfg.Policies.Budget.DailyLimit, 5 * money.Dollar},
		{"monthly limit", cfg.Policies.Budget.MonthlyLimit, 50 * money.Dollar},
		{"on limit", cfg.Policies.Budget.OnLimitReached, "pause-all"},
		{"rate limit", cfg.Policies.Actors[0].RateLimit.PerMinute, 60},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.Spec == nil {
		t.Fatal("cron spec not resolved")
	}
}

func TestAutonomyOnlyStricter(t *testing.T) {
	a := &txtar.Archive{Files: []txtar.File{
		{Name: "schedules/a.yaml", Data: []byte(`schedules:
  - {name: up, cron: "@daily", target_tool: r, actor: user_x, autonomy: L3}
  - {name: down, cron: "@daily", target_tool: r, actor: user_x, autonomy: ask}
`)},
		{Name: "policies/p.yaml", Data: []byte(`tools:
  r: {kind: exec, command: [echo], tier: 0}
actors:
  - {actor: "user_*", scopes: ["*"], autonomy: L1_Draft}
roles: {ops: [octocat]}
permissions: {approve: [ops]}
`)},
	}}
	cfg, diags, err := Load(writeArchive(t, a))
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("load: %v %v", err, diags)
	}
	if got := cfg.Schedule("up").Autonomy; got != model.L1Draft {
		t.Errorf("a schedule raised its autonomy above the actor's: %v", got)
	}
	if got := cfg.Schedule("down").Autonomy; got != model.L0Ask {
		t.Errorf("stricter autonomy not kept: %v", got)
	}
}
