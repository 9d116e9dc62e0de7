package model

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// An exact entry wins over any pattern; among patterns, the longest
// literal part; among those, the first in file order. Nothing matching is
// nil, and so is a pattern that does not parse.
func TestActorResolution(t *testing.T) {
	p := &Policies{Actors: []*Actor{
		{Pattern: "n8n_*"},
		{Pattern: "n8n_workflow_*"},
		{Pattern: "*8n_workflow_n*"}, // as long a literal part as the one before, and later: not preferred
		{Pattern: "n8n_workflow_news"},
		{Pattern: "agent_[a-m]*"},
		{Pattern: "*"},
		{Pattern: "bad[", Scopes: []string{"*"}},
	}}
	for id, want := range map[string]string{
		"n8n_workflow_news":       "n8n_workflow_news", // exact, though patterns match it too
		"n8n_workflow_newsletter": "n8n_workflow_*",    // the longest literal part; ties go to the first
		"n8n_other":               "n8n_*",
		"agent_lumina":            "agent_[a-m]*",
		"agent_oracle":            "*",
		"bad[":                    "bad[", // exact still matches an entry whose pattern does not parse
		"bad":                     "*",
	} {
		if a := p.Actor(id); a == nil || a.Pattern != want {
			t.Errorf("Actor(%q) = %v, want %s", id, a, want)
		}
	}
	if a := (&Policies{Actors: []*Actor{{Pattern: "agent_*"}, {Pattern: "bad["}}}).Actor("someone"); a != nil {
		t.Errorf("no actor matches: got %s", a.Pattern)
	}
}

// Scopes grant a capability exactly, by an ancestor's prefix.* or all of
// them with *; a prefix grants only below it.
func TestMissingScopes(t *testing.T) {
	for _, c := range []struct {
		scopes, caps, want []string
	}{
		{[]string{"*"}, []string{"github.issues.create", "x"}, nil},
		{[]string{"github.issues.create"}, []string{"github.issues.create"}, nil},
		{[]string{"github.*"}, []string{"github.issues.create", "github.repo"}, nil},
		{[]string{"github.issues.*"}, []string{"github.issues.create", "github.repo.write"}, []string{"github.repo.write"}},
		{[]string{"github.*"}, []string{"github", "githubx.read"}, []string{"github", "githubx.read"}},
		{[]string{"github.issues"}, []string{"github.issues.create"}, []string{"github.issues.create"}},
		{nil, []string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a"}, nil, nil},
	} {
		if got := Missing(c.scopes, c.caps); !slices.Equal(got, c.want) {
			t.Errorf("Missing(%q, %q) = %q, want %q", c.scopes, c.caps, got, c.want)
		}
	}
}

// A tenant's own policy wins, then the global one; a tenant's policy never
// applies to another tenant or to schedules without one.
func TestTaskPolicyTenantThenGlobal(t *testing.T) {
	global := &TaskPolicy{TaskType: "deploy"}
	acme := &TaskPolicy{TaskType: "deploy", Tenant: "acme"}
	other := &TaskPolicy{TaskType: "notify", Tenant: "acme"}
	p := &Policies{TaskPolicies: []*TaskPolicy{acme, global, other}}
	for _, c := range []struct {
		taskType, tenant string
		want             *TaskPolicy
	}{
		{"deploy", "acme", acme},
		{"deploy", "globex", global},
		{"deploy", "", global},
		{"notify", "acme", other},
		{"notify", "globex", nil}, // the default: auto_execute
		{"notify", "", nil},
		{"other", "acme", nil},
	} {
		if got := p.TaskPolicy(c.taskType, c.tenant); got != c.want {
			t.Errorf("TaskPolicy(%q, %q) = %+v, want %+v", c.taskType, c.tenant, got, c.want)
		}
	}
}

// ApprovalReasons names every rule that asks for a human, in a fixed
// order, and none for a run that may go ahead alone.
func TestApprovalReasons(t *testing.T) {
	p := &Policies{TaskPolicies: []*TaskPolicy{
		{TaskType: "deploy", AutoExecute: false, MaxRiskLevel: RiskHigh},
		{TaskType: "deploy", Tenant: "acme", AutoExecute: true, MaxRiskLevel: RiskLow},
		{TaskType: "notify", Tenant: "acme", AutoExecute: false, MaxRiskLevel: RiskHigh},
	}}
	deploy := &Tool{Name: "deploy", RiskLevel: RiskMedium}
	quiet := &Tool{Name: "quiet"}
	for _, c := range []struct {
		name string
		s    *Schedule
		tool *Tool
		want []string
	}{
		{"may run", &Schedule{SafetyTier: TierLocalWrite, Autonomy: L2ExecuteNotify}, quiet, nil},
		{"external", &Schedule{SafetyTier: TierExternal, Autonomy: L3ExecuteSilent}, quiet, []string{"safety tier 2 (external)"}},
		{"global policy", &Schedule{Autonomy: L2ExecuteNotify}, deploy, []string{"task policy for deploy (global) has auto_execute: false"}},
		{"tenant policy over global", &Schedule{Tenant: "acme", Autonomy: L2ExecuteNotify}, deploy,
			[]string{"tool risk medium is above the policy's max_risk_level low"}},
		{"tenant without a policy of its own", &Schedule{Tenant: "globex", Autonomy: L2ExecuteNotify}, deploy,
			[]string{"task policy for deploy (global) has auto_execute: false"}},
		{"tool", &Schedule{Autonomy: L3ExecuteSilent}, &Tool{Name: "t", RequiresApproval: true}, []string{"tool t requires approval"}},
		{"draft", &Schedule{Autonomy: L1Draft}, quiet, []string{"autonomy L1_Draft"}},
		{"ask", &Schedule{Autonomy: L0Ask}, quiet, []string{"autonomy L0_Ask"}},
		{"every rule", &Schedule{Tenant: "acme", SafetyTier: TierExternal, Autonomy: L0Ask},
			&Tool{Name: "notify", RequiresApproval: true, RiskLevel: RiskHigh},
			[]string{"safety tier 2 (external)", "task policy for notify (tenant acme) has auto_execute: false",
				"tool notify requires approval", "autonomy L0_Ask", "tool notify has risk_level high"}},
		{"risk high at tier 0, without a task policy", &Schedule{Autonomy: L3ExecuteSilent}, &Tool{Name: "wipe", RiskLevel: RiskHigh},
			[]string{"tool wipe has risk_level high"}},
	} {
		if got := p.ApprovalReasons(c.s, c.tool); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
	}
}

// approve takes the task policy's approver_role, else permissions.approve;
// another verb its own entry (even an empty one, which is nobody), else
// what approve would take.
func TestRolesFor(t *testing.T) {
	p := &Policies{Permissions: map[string][]string{
		VerbApprove:  {"founder"},
		VerbRollback: {"ops"},
		VerbTrigger:  {},
	}}
	for _, c := range []struct {
		verb, taskRole string
		want           []string
	}{
		{VerbApprove, "", []string{"founder"}},
		{VerbApprove, "deployers", []string{"deployers"}},
		{VerbRollback, "deployers", []string{"ops"}},
		{VerbTrigger, "", []string{}},
		{VerbReject, "", []string{"founder"}},
		{VerbReject, "deployers", []string{"deployers"}},
	} {
		if got := p.RolesFor(c.verb, c.taskRole); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("RolesFor(%s, %q) = %#v, want %#v", c.verb, c.taskRole, got, c.want)
		}
	}
	if got := (&Policies{}).RolesFor(VerbResume, ""); got != nil {
		t.Errorf("no permissions at all: %q", got)
	}
}

func TestAutonomyLevels(t *testing.T) {
	for in, want := range map[string]Autonomy{
		"L0": L0Ask, "l1": L1Draft, "L2_ExecuteNotify": L2ExecuteNotify, "l3_executesilent": L3ExecuteSilent,
		"ask": L0Ask, "draft": L1Draft, "execute_notify": L2ExecuteNotify, "ExecuteSilent": L3ExecuteSilent, " L3 ": L3ExecuteSilent,
	} {
		if got, err := parseAutonomy(in); err != nil || got != want {
			t.Errorf("parseAutonomy(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"L4", "", "execute"} {
		if _, err := parseAutonomy(in); err == nil {
			t.Errorf("parseAutonomy(%q) accepted", in)
		}
	}
	// Lower is stricter: L0 and L1 need a human.
	for a, want := range map[Autonomy]bool{L0Ask: true, L1Draft: true, L2ExecuteNotify: false, L3ExecuteSilent: false} {
		if a.NeedsApproval() != want {
			t.Errorf("%s needs approval: %v", a, !want)
		}
	}
	if L2ExecuteNotify.Short() != "L2" || Autonomy(7).String() != "L?(7)" {
		t.Errorf("names: %s %s", L2ExecuteNotify.Short(), Autonomy(7))
	}
}

// levels holds a value of each level type, as YAML writes them.
type levels struct {
	Tier     Tier     `yaml:"tier"`
	Autonomy Autonomy `yaml:"autonomy"`
	Risk     Risk     `yaml:"risk"`
	Wait     Duration `yaml:"wait"`
}

// YAML scalars of the level types, and what each refuses.
func TestLevelsFromYAML(t *testing.T) {
	var v levels
	if err := yaml.Unmarshal([]byte("tier: local-write\nautonomy: draft\nrisk: 3\nwait: 2d\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Tier != TierLocalWrite || v.Autonomy != L1Draft || v.Risk != RiskHigh || v.Wait.D() != 48*time.Hour {
		t.Fatalf("%+v", v)
	}
	if err := yaml.Unmarshal([]byte("tier: 2\nrisk: Medium\n"), &v); err != nil || v.Tier != TierExternal || v.Risk != RiskMedium {
		t.Fatalf("%+v %v", v, err)
	}
	if Tier(5).String() != "tier(5)" || TierReadOnly.String() != "read_only" || Risk(9).String() != "risk(9)" {
		t.Error("names of levels out of range")
	}
}

func TestLevelsFromYAMLRefused(t *testing.T) {
	var v levels
	for doc, want := range map[string]string{
		"tier: 3":        "unknown safety tier",
		"tier: [1]":      "safety tier must be a single value",
		"autonomy: L9":   "unknown autonomy level",
		"autonomy: [L1]": "autonomy level must be a single value",
		"risk: extreme":  "unknown risk level",
		"wait: 5":        "has no unit",
		"wait: {a: 1}":   "duration must be a single value",
	} {
		if err := yaml.Unmarshal([]byte(doc), &v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}

func TestLabels(t *testing.T) {
	var v struct {
		RunsOn Labels `yaml:"runs_on"`
	}
	for doc, want := range map[string]string{
		"runs_on: ubuntu-latest":           "ubuntu-latest",
		"runs_on: [self-hosted, gpu]":      "self-hosted,gpu",
		"runs_on: ~":                       "",
		"runs_on: [a, [b]]":                "error: runs_on: each runner label must be a single value",
		"runs_on: [a, ~]":                  "error: runs_on: each runner label must be a single value",
		"runs_on: {a: b}":                  "error: runs_on must be a runner label or a list of labels",
		"runs_on: [a,b,c,d,e,f,g,h,i,j,k]": "error: runs_on has 11 labels; at most 10",
	} {
		v.RunsOn = Labels{"before"} // a null clears it
		got := "error: "
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			got += err.Error()
		} else {
			got = strings.Join(v.RunsOn, ",")
		}
		if !strings.HasPrefix(got, want) || want == "" && got != "" {
			t.Errorf("%q: got %q, want %q", doc, got, want)
		}
	}
	for l, want := range map[string]bool{"ubuntu-latest": true, "self_hosted.x": true, "-x": false, "a b": false, strings.Repeat("a", 101): false} {
		if ValidLabel(l) != want {
			t.Errorf("ValidLabel(%q) = %v", l, !want)
		}
	}
	cfg := &Config{Policies: Policies{Tools: map[string]*Tool{"gpu": {RunsOn: Labels{"gpu"}}, "plain": {}}}}
	def := Labels{"ubuntu-latest"}
	for _, c := range []struct {
		s    *Schedule
		want string
	}{
		{&Schedule{TargetTool: "gpu", RunsOn: Labels{"big"}}, "big"}, // the schedule's own first
		{&Schedule{TargetTool: "gpu"}, "gpu"},                        // then its tool's
		{&Schedule{TargetTool: "plain"}, "ubuntu-latest"},            // then the plan's default
		{&Schedule{TargetTool: "unknown"}, "ubuntu-latest"},
	} {
		if got := strings.Join(cfg.RunsOn(c.s, def), ","); got != c.want {
			t.Errorf("RunsOn(%s) = %s, want %s", c.s.TargetTool, got, c.want)
		}
	}
}

// A schedule is found by id, or by a name only one schedule has.
func TestScheduleLookup(t *testing.T) {
	a := &Schedule{ID: "a", Name: "report"}
	b := &Schedule{ID: "b", Name: "report"}
	c := &Schedule{ID: "c", Name: "a"} // named like a's id: the id wins
	d := &Schedule{ID: "d", Name: "deploy"}
	cfg := &Config{Schedules: []*Schedule{a, b, c, d}}
	for ref, want := range map[string]*Schedule{"a": a, "b": b, "deploy": d, "report": nil, "nope": nil} {
		if got := cfg.Schedule(ref); got != want {
			t.Errorf("Schedule(%q) = %+v, want %+v", ref, got, want)
		}
	}
}

func TestDeriveIDIsStable(t *testing.T) {
	id := DeriveID("acme", "nightly report")
	if id != DeriveID("acme", "nightly report") || !strings.HasPrefix(id, "sch_") || len(id) != len("sch_")+8 {
		t.Fatalf("DeriveID = %q", id)
	}
	if id == DeriveID("", "nightly report") || id == DeriveID("acme", "nightly report 2") {
		t.Fatal("the tenant and the name both make the id")
	}
}

func TestBackoffDoublesUpToTheCeiling(t *testing.T) {
	r := Retry{BackoffBase: Duration(5 * time.Second), BackoffMax: Duration(30 * time.Second)}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, r.Backoff(n))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("backoffs %v, want %v", got, want)
	}
	if d := (Retry{BackoffBase: Duration(time.Minute), BackoffMax: Duration(time.Second)}).Backoff(1); d != time.Second {
		t.Fatalf("a base above the ceiling: %v", d)
	}
}

func TestToolDeclares(t *testing.T) {
	tool := &Tool{Writes: []string{"reports/**", "docs/*.md"}}
	for p, want := range map[string]bool{"reports/a/b.txt": true, "docs/x.md": true, "docs/sub/x.md": false, "var/ledger": false} {
		if tool.Declares(p) != want {
			t.Errorf("Declares(%q) = %v", p, !want)
		}
	}
	if (&Tool{}).Declares("anything") {
		t.Error("a tool without writes declares nothing")
	}
}

// Builtins are read-only, safe to retry and to run in a dry run, and each
// call returns fresh entries a policy file may change.
func TestBuiltinTools(t *testing.T) {
	b := BuiltinTools()
	for _, name := range []string{BuiltinTasksList, BuiltinTasksByTrace, BuiltinTasksLastFailed, BuiltinBudget} {
		tool := b[name]
		if tool == nil || tool.Name != name || tool.Kind != KindBuiltin || tool.Tier != TierReadOnly || !tool.DryRunSupported || !tool.Idempotent || len(tool.Capabilities) != 1 {
			t.Errorf("%s: %+v", name, tool)
		}
	}
	b[BuiltinBudget].Capabilities[0] = "changed"
	if BuiltinTools()[BuiltinBudget].Capabilities[0] != "astra.budget.read" {
		t.Error("BuiltinTools shares its entries between calls")
	}
}
