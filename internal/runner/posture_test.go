package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/posture"
	"github.com/astra-gitops/astra/internal/seal"
)

// postureForge answers the posture's questions about GitHub.
type postureForge struct {
	rules map[string]forge.BranchRules
	err   error // every call fails with it
	calls int
}

func (f *postureForge) DefaultBranch(context.Context) (string, error) {
	f.calls++
	return "main", f.err
}

func (f *postureForge) BranchRules(_ context.Context, b string) (forge.BranchRules, error) {
	f.calls++
	return f.rules[b], f.err
}

func (f *postureForge) BranchProtection(context.Context, string) (*forge.Protection, error) {
	f.calls++
	return nil, f.err
}

func (f *postureForge) Environment(context.Context, string) (forge.Environment, error) {
	f.calls++
	return forge.Environment{}, f.err
}

func (f *postureForge) RepoSecretExists(context.Context, string) (bool, error) {
	f.calls++
	return false, f.err
}

func (f *postureForge) DefaultWorkflowPermissions(context.Context) (forge.WorkflowPermissions, error) {
	f.calls++
	return forge.WorkflowPermissions{}, f.err
}

const postureWorkflow = `on: {schedule: [{cron: "*/5 * * * *"}]}
permissions: {contents: write, pull-requests: write, issues: write}
jobs:
  run-due:
    runs-on: ubuntu-latest
    environment: astra
    steps:
      - {uses: actions/checkout@v7, with: {persist-credentials: false}}
      - {uses: astra-gitops/astra@v1.2.3, env: {ASTRA_LEDGER_KEY: "${{ secrets.ASTRA_LEDGER_KEY }}"}}
`

// postureEnv is approvalEnv without trust.accept_risk, whose schedule s is
// approved (pull request #1 merged), in a repository with the documented
// setup's files: only GitHub's answers decide the posture.
func postureEnv(t *testing.T, acceptRisk string) (*env, *postureForge, func(*Options)) {
	t.Helper()
	e := approvalEnv(t, "")
	_, pub, err := seal.Generate("ledger")
	if err != nil {
		t.Fatal(err)
	}
	policies := strings.Replace(testPolicies, "trust:\n", "trust:\n  ledger_keys: ["+pub.String()+"]\n", 1)
	policies = strings.Replace(policies, "  accept_risk: these tests", "  #", 1)
	if acceptRisk != "" {
		policies += "  accept_risk: " + acceptRisk + "\n"
	}
	for p, data := range map[string]string{"policies/p.yaml": policies, ".github/CODEOWNERS": "* @octo/owners\n", ".github/workflows/astra.yml": postureWorkflow} {
		full := filepath.Join(e.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, diags, err := config.Load(e.dir)
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("config: %v %v", err, diags)
	}
	e.cfg = cfg
	e.forge.merge(t, 1, "octocat", e.dir, "s")
	pf := &postureForge{rules: map[string]forge.BranchRules{
		"main": {Types: []string{"deletion", "non_fast_forward", "pull_request"},
			PullRequest: &forge.PullRequestRule{RequireCodeOwnerReview: true, DismissStaleReviewsOnPush: true}},
		"astra-state": {Types: []string{"deletion", "non_fast_forward"}},
	}}
	mod := func(o *Options) {
		o.Posture = posture.Input{Forge: pf, LedgerBranch: "astra-state", Key: posture.Key{Set: true, Held: true}, Sandbox: func() error { return nil }}
	}
	return e, pf, mod
}

func TestPostureHoldsTier2Runs(t *testing.T) {
	e, pf, mod := postureEnv(t, "")
	rep := e.runDue("2026-11-22T09:10:00Z", mod)
	if o := outcome(t, rep, "s"); o.Action != ActionRan {
		t.Fatalf("with the posture: %s %s", o.Action, o.Detail)
	}
	// Tier 2 asks GitHub once, the posture's tier-2 questions only.
	if pf.calls != 3 {
		t.Errorf("%d calls to GitHub", pf.calls)
	}
	if e.count(ledger.TrustRiskAccepted, "") != 0 {
		t.Error("a risk was accepted with the posture in place")
	}
}

// Without a ruleset on the ledger branch, an approved tier-2 run is
// skipped with reason posture and the failing check; the approval is not
// used up, and runs once the ruleset exists. Other tiers go on.
func TestPostureFailingSkipsTier2(t *testing.T) {
	e, pf, mod := postureEnv(t, "")
	delete(pf.rules, "astra-state")
	rep := e.runDue("2026-11-22T10:00:30Z", mod)
	o := outcome(t, rep, "s")
	if o.Action != ActionSkipped || o.Reason != ledger.ReasonPosture || !strings.Contains(o.Detail, "ledger-branch-rules fail: astra-state: nothing forbidden") {
		t.Fatalf("s: %s %s %s", o.Action, o.Reason, o.Detail)
	}
	if e.exec.runs("s") != 0 || e.count(ledger.ApprovalConsumed, "s") != 0 {
		t.Fatal("tier 2 ran, or its approval was used, without the posture")
	}
	if !strings.Contains(e.lastError(ledger.RunSkipped), "ledger-branch-rules fail") {
		t.Errorf("recorded: %q", e.lastError(ledger.RunSkipped))
	}
	if o := outcome(t, rep, "w"); o.Action != ActionRan {
		t.Errorf("tier 1: %s", o.Action)
	}
	pf.rules["astra-state"] = forge.BranchRules{Types: []string{"deletion", "non_fast_forward"}}
	if o := outcome(t, e.runDue("2026-11-22T10:10:00Z", mod), "s"); o.Action != ActionRan {
		t.Fatalf("with the ruleset: %s %s", o.Action, o.Detail)
	}

	// No GitHub at all: the API checks are unknown, which is no pass.
	e2, _, _ := postureEnv(t, "")
	o = outcome(t, e2.runDue("2026-11-22T09:10:00Z"), "s")
	if o.Reason != ledger.ReasonPosture || !strings.Contains(o.Detail, "default-branch-rules unknown: no GitHub token") {
		t.Fatalf("without GitHub: %s %s", o.Reason, o.Detail)
	}
}

// trust.accept_risk lets tier 2 run without the posture, and the
// acceptance is recorded once per run with the failing checks.
func TestPostureRiskAccepted(t *testing.T) {
	e, pf, mod := postureEnv(t, "a sandbox repository for trying astra out")
	delete(pf.rules, "main")
	rep := e.runDue("2026-11-22T09:10:00Z", mod)
	if o := outcome(t, rep, "s"); o.Action != ActionRan {
		t.Fatalf("accepted risk: %s %s", o.Action, o.Detail)
	}
	var accepted []ledger.Event
	for _, ev := range e.events() {
		if ev.Event == ledger.TrustRiskAccepted {
			accepted = append(accepted, ev)
		}
	}
	if len(accepted) != 1 || !strings.Contains(accepted[0].Error, "default-branch-rules fail: main: nothing forbidden") {
		t.Fatalf("recorded: %+v", accepted)
	}
	var d riskDetail
	if err := json.Unmarshal(accepted[0].Detail, &d); err != nil || d.Reason != "a sandbox repository for trying astra out" || len(d.Checks) != 1 {
		t.Fatalf("detail: %s (%v)", accepted[0].Detail, err)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "trust.accept_risk") {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	// A run without tier 2 asks nothing and accepts nothing.
	pf.calls = 0
	e.runDue("2026-11-22T10:00:30Z", mod)
	if pf.calls != 0 || e.count(ledger.TrustRiskAccepted, "") != 1 {
		t.Errorf("a run without tier 2: %d calls, %d acceptances", pf.calls, e.count(ledger.TrustRiskAccepted, ""))
	}
}

// GitHub down while checking the posture is an outage: the approved run is
// left for the next run (nothing recorded, the approval unused), the run
// ends as infrastructure after everything else ran.
func TestPostureOutageDefers(t *testing.T) {
	e, pf, mod := postureEnv(t, "")
	pf.err = errkind.Infra(errors.New("GitHub returned 502"))
	rep, err := e.runner("2026-11-22T10:00:30Z", mod).RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err = %v", err)
	}
	if o := outcome(t, rep, "s"); o.Action != ActionDeferred || o.Reason != ledger.ReasonPosture {
		t.Fatalf("s: %s %s", o.Action, o.Reason)
	}
	if o := outcome(t, rep, "w"); o.Action != ActionRan {
		t.Errorf("tier 1: %s", o.Action)
	}
	if e.count(ledger.RunSkipped, "s") != 0 || e.count(ledger.ApprovalConsumed, "s") != 0 {
		t.Fatal("the outage decided the slot")
	}
	pf.err = nil
	if o := outcome(t, e.runDue("2026-11-22T10:10:00Z", mod), "s"); o.Action != ActionRan {
		t.Fatalf("after the outage: %s %s", o.Action, o.Detail)
	}
}
