package posture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/seal"
)

// fakeForge answers like GitHub from fields a test sets, in the style of
// goreleaser's client.Mock.
type fakeForge struct {
	def        string
	defErr     error
	rules      map[string]forge.BranchRules
	rulesErr   error
	protection map[string]*forge.Protection
	protErr    error
	env        *forge.Environment // nil: no such environment
	envErr     error
	secrets    map[string]bool
	secretErr  error
	workflow   forge.WorkflowPermissions
	wfErr      error
	calls      []string
}

func (f *fakeForge) DefaultBranch(context.Context) (string, error) {
	f.calls = append(f.calls, "default")
	return f.def, f.defErr
}

func (f *fakeForge) BranchRules(_ context.Context, b string) (forge.BranchRules, error) {
	f.calls = append(f.calls, "rules "+b)
	return f.rules[b], f.rulesErr
}

func (f *fakeForge) BranchProtection(_ context.Context, b string) (*forge.Protection, error) {
	f.calls = append(f.calls, "protection "+b)
	return f.protection[b], f.protErr
}

func (f *fakeForge) Environment(_ context.Context, name string) (forge.Environment, error) {
	f.calls = append(f.calls, "environment "+name)
	switch {
	case f.envErr != nil:
		return forge.Environment{}, f.envErr
	case f.env == nil || !strings.EqualFold(f.env.Name, name):
		return forge.Environment{}, errkind.Usage(fmt.Errorf("environment %s: %w", name, forge.ErrNotFound))
	}
	return *f.env, nil
}

func (f *fakeForge) RepoSecretExists(_ context.Context, name string) (bool, error) {
	f.calls = append(f.calls, "secret "+name)
	return f.secrets[name], f.secretErr
}

func (f *fakeForge) DefaultWorkflowPermissions(context.Context) (forge.WorkflowPermissions, error) {
	f.calls = append(f.calls, "workflow")
	return f.workflow, f.wfErr
}

var (
	noAccess = errkind.Usage(fmt.Errorf("GitHub returned 403: %w", forge.ErrNoAccess))
	outage   = errkind.Infra(errors.New("GitHub returned 502"))
)

// good is a forge with the documented setup.
func good() *fakeForge {
	return &fakeForge{
		def: "main",
		rules: map[string]forge.BranchRules{
			"main":        {Types: []string{"deletion", "non_fast_forward", "pull_request"}, PullRequest: &forge.PullRequestRule{RequireCodeOwnerReview: true, DismissStaleReviewsOnPush: true, RequiredApprovingReviewCount: 1}},
			"astra-state": {Types: []string{"deletion", "non_fast_forward"}},
		},
		env:      &forge.Environment{Name: "astra", Policies: []forge.DeploymentPolicy{{Name: "main", Type: "branch"}}},
		secrets:  map[string]bool{"ASTRA_APPROVAL_SECRET": true},
		workflow: forge.WorkflowPermissions{Default: "read"},
	}
}

const goodWorkflow = `name: astra
on:
  schedule:
    - cron: "*/5 * * * *"
permissions:
  contents: write
  pull-requests: write
  issues: write
jobs:
  run-due:
    runs-on: ubuntu-latest
    environment: astra
    steps:
      - uses: actions/checkout@v7
        with:
          persist-credentials: false
      - uses: astra-gitops/astra@v1.2.3
        env:
          GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}
          ASTRA_LEDGER_KEY: ${{ secrets.ASTRA_LEDGER_KEY }}
`

const goodCodeOwners = `/.astra.yaml @octo/owners
/.github/ @octo/owners
/policies/ @octo/owners
/schedules/ @octo/owners
/scripts/tools/ @octo/owners
`

// repo writes a repository with the documented setup's files; files
// override or (with "") remove them.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{
		".github/CODEOWNERS":          goodCodeOwners,
		".github/workflows/astra.yml": goodWorkflow,
		"schedules/a.yaml":            "name: a\n",
		"policies/p.yaml":             "tools: {}\n",
		"scripts/tools/deploy.sh":     "#!/bin/sh\n",
	}
	for k, v := range files {
		all[k] = v
	}
	for rel, data := range all {
		if data == "" {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func policies(t *testing.T) (*model.Policies, string) {
	t.Helper()
	priv, pub, err := seal.Generate("astra-ledger")
	if err != nil {
		t.Fatal(err)
	}
	return &model.Policies{
		Trust: model.Trust{LedgerKeys: []string{pub.String()}},
		Tools: map[string]*model.Tool{"deploy": {Name: "deploy", Kind: "exec", Command: []string{"sh", "scripts/tools/deploy.sh", "--now"}}},
	}, string(priv)
}

type setup struct {
	in Input
	f  *fakeForge
}

func newSetup(t *testing.T, files map[string]string) *setup {
	p, _ := policies(t)
	f := good()
	return &setup{f: f, in: Input{Root: repo(t, files), Policies: p, Repository: "octo/widgets", LedgerBranch: "astra-state", Forge: f,
		Key: Key{Set: true, Held: true}, Run: true, Sandbox: func() error { return nil }}}
}

func (s *setup) run(t *testing.T) map[string]Check {
	t.Helper()
	checks, err := Run(context.Background(), s.in)
	if err != nil && !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("Run: %v", err)
	}
	out := map[string]Check{}
	for _, c := range checks {
		out[c.Name] = c
	}
	return out
}

func TestDocumentedSetupPasses(t *testing.T) {
	s := newSetup(t, nil)
	checks, err := Run(context.Background(), s.in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Status != Pass {
			t.Errorf("%s", c)
		}
	}
	if ok, failing := Tier2(checks); !ok {
		t.Errorf("tier 2 refused: %v", failing)
	}
	if len(checks) != 11 {
		t.Errorf("%d checks", len(checks))
	}
}

// Each check on its own: what makes it fail, warn or unknown, and whether
// tier 2 then stops.
func TestChecks(t *testing.T) {
	for _, c := range []struct {
		name   string
		check  string
		want   Status
		found  string
		files  map[string]string
		modify func(*setup)
	}{
		// ledger key
		{name: "no key in policies", check: LedgerKey, want: Fail, found: "no trust.ledger_keys", modify: func(s *setup) { s.in.Policies.Trust.LedgerKeys = nil }},
		{name: "run without the key", check: LedgerKey, want: Fail, found: "does not hold", modify: func(s *setup) { s.in.Key = Key{} }},
		{name: "doctor without the key", check: LedgerKey, want: Warn, found: "as expected outside CI", modify: func(s *setup) { s.in.Key, s.in.Run = Key{}, false }},
		{name: "another key", check: LedgerKey, want: Fail, found: "which trust.ledger_keys does not list", modify: func(s *setup) {
			s.in.Key = Key{Set: true, Problem: "ASTRA_LEDGER_KEY is key SHA256:x, which trust.ledger_keys does not list"}
		}},

		// ledger branch rules
		{name: "ledger branch unprotected", check: LedgerBranchRules, want: Fail, found: "astra-state: nothing forbidden", modify: func(s *setup) { delete(s.f.rules, "astra-state") }},
		{name: "ledger branch deletable", check: LedgerBranchRules, want: Fail, found: "no force pushes (rulesets)", modify: func(s *setup) {
			s.f.rules["astra-state"] = forge.BranchRules{Types: []string{"non_fast_forward"}}
		}},
		{name: "ledger branch by classic protection", check: LedgerBranchRules, want: Pass, found: "classic protection", modify: func(s *setup) {
			delete(s.f.rules, "astra-state")
			s.f.protection = map[string]*forge.Protection{"astra-state": {}}
		}},
		{name: "ledger branch, classic protection unreadable", check: LedgerBranchRules, want: Unknown, found: "astra-state: its rulesets: nothing forbidden; classic branch protection might", modify: func(s *setup) {
			delete(s.f.rules, "astra-state")
			s.f.protErr = noAccess
		}},
		{name: "ledger on the default branch", check: LedgerBranchRules, want: Pass, found: "main:", modify: func(s *setup) { s.in.LedgerBranch = "" }},
		{name: "no GitHub", check: LedgerBranchRules, want: Unknown, found: "no GitHub token", modify: func(s *setup) { s.in.Forge = nil }},
		{name: "GitHub down", check: LedgerBranchRules, want: Unknown, found: "did not answer", modify: func(s *setup) { s.f.rulesErr = outage }},

		// default branch rules
		{name: "default without rules", check: DefaultBranchRules, want: Fail, found: "main: nothing forbidden", modify: func(s *setup) { delete(s.f.rules, "main") }},
		{name: "default without code owners", check: DefaultBranchRules, want: Fail, found: "pull requests, stale reviews dismissed", modify: func(s *setup) {
			s.f.rules["main"].PullRequest.RequireCodeOwnerReview = false
		}},
		{name: "default keeps stale reviews", check: DefaultBranchRules, want: Fail, found: "with code-owner review (", modify: func(s *setup) {
			s.f.rules["main"].PullRequest.DismissStaleReviewsOnPush = false
		}},
		{name: "default branch unknown", check: DefaultBranchRules, want: Unknown, found: "did not answer", modify: func(s *setup) { s.f.defErr = outage }},
		{name: "rulesets not in this plan", check: DefaultBranchRules, want: Unknown, found: "may not read", modify: func(s *setup) {
			s.f.rulesErr, s.f.protErr = noAccess, noAccess
		}},

		// ledger branch
		{name: "no ledger_branch", check: LedgerBranch, want: Fail, found: "not set", modify: func(s *setup) { s.in.LedgerBranch = "" }},
		{name: "ledger_branch is main", check: LedgerBranch, want: Fail, found: "the default branch", modify: func(s *setup) { s.in.LedgerBranch = "main" }},
		{name: "ledger_branch without GitHub", check: LedgerBranch, want: Unknown, modify: func(s *setup) { s.in.Forge = nil }},

		// CODEOWNERS
		{name: "no CODEOWNERS", check: CodeOwners, want: Fail, found: "no CODEOWNERS file", files: map[string]string{".github/CODEOWNERS": ""}},
		{name: "CODEOWNERS at the root", check: CodeOwners, want: Pass, files: map[string]string{
			".github/CODEOWNERS": "", "CODEOWNERS": goodCodeOwners + "/CODEOWNERS @octo/owners\n"}},
		{name: "CODEOWNERS without itself", check: CodeOwners, want: Fail, found: "without an owner: CODEOWNERS", files: map[string]string{
			".github/CODEOWNERS": "", "CODEOWNERS": goodCodeOwners}},
		{name: "CODEOWNERS that another can override", check: CodeOwners, want: Fail, found: "without an owner: .github/actions/new/action.yml, .github/CODEOWNERS", files: map[string]string{
			".github/CODEOWNERS": "", "CODEOWNERS": strings.Replace(goodCodeOwners, "/.github/", "/.github/workflows/", 1) + "/CODEOWNERS @octo/owners\n"}},
		{name: "yml schedules left out", check: CodeOwners, want: Fail, found: "schedules/new.yml", files: map[string]string{
			".github/CODEOWNERS": strings.Replace(goodCodeOwners, "/schedules/", "/schedules/*.yaml", 1)}},
		{name: "tool script outside scripts/tools", check: CodeOwners, want: Fail, found: "bin/deploy", files: map[string]string{"bin/deploy": "#!/bin/sh\n"},
			modify: func(s *setup) { s.in.Policies.Tools["deploy"].Rollback = []string{"bin/deploy"} }},
		{name: "a later line takes owners away", check: CodeOwners, want: Fail, found: "policies/p.yaml", files: map[string]string{
			".github/CODEOWNERS": goodCodeOwners + "/policies/*.yaml\n"}},
		{name: "catch-all owner", check: CodeOwners, want: Pass, files: map[string]string{".github/CODEOWNERS": "* @octo/owners\n"}},

		// workflows
		{name: "persisted credentials", check: Workflows, want: Fail, found: "astra.yml:14: job run-due: actions/checkout keeps the token", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "persist-credentials: false", "fetch-depth: 1", 1)}},
		{name: "any checkout anywhere", check: Workflows, want: Fail, found: "other.yml", files: map[string]string{
			".github/workflows/other.yml": "on: push\njobs:\n  build:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v7\n"}},
		{name: "key without environment", check: Workflows, want: Fail, found: "declares no environment", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "    environment: astra\n", "", 1)}},
		{name: "key in another environment", check: Workflows, want: Fail, found: "declares environment prod", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "environment: astra", "environment: {name: prod}", 1)}},
		{name: "too many permissions", check: Workflows, want: Fail, found: "write permissions it does not need: actions", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "  issues: write\n", "  issues: write\n  actions: write\n", 1)}},
		{name: "write-all", check: Workflows, want: Fail, found: "write-all", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "permissions:\n  contents: write\n  pull-requests: write\n  issues: write\n", "permissions: write-all\n", 1)}},
		{name: "no permissions", check: Workflows, want: Fail, found: "no permissions: block", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "permissions:\n  contents: write\n  pull-requests: write\n  issues: write\n", "", 1)}},
		{name: "no key in CI", check: Workflows, want: Fail, found: "no job gives astra ASTRA_LEDGER_KEY", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "          ASTRA_LEDGER_KEY: ${{ secrets.ASTRA_LEDGER_KEY }}\n", "", 1)}},
		{name: "no workflows", check: Workflows, want: Fail, found: "no workflows", files: map[string]string{".github/workflows/astra.yml": ""}},
		{name: "astra run from a script", check: Workflows, want: Pass, files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "uses: astra-gitops/astra@v1.2.3", "run: ./bin/astra run-due", 1)}},
		{name: "a what-if clock in a script", check: Workflows, want: Fail, found: "astra.yml:17: job run-due passes --now to astra", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "uses: astra-gitops/astra@v1.2.3", "run: ./bin/astra run-due --now 2030-01-01T00:00:00Z", 1)}},
		{name: "a test clock in the action's args", check: Workflows, want: Fail, found: "passes --test-clock to astra", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "        env:\n", "        with:\n          args: --limit 5 --test-clock\n        env:\n", 1)}},
		{name: "a quoted what-if clock", check: Workflows, want: Fail, found: "passes --now to astra", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "uses: astra-gitops/astra@v1.2.3", `run: ./bin/astra run-due "--now=2030-01-01T00:00:00Z" "--test-clock"`, 1)}},
		{name: "a single-quoted test clock", check: Workflows, want: Fail, found: "passes --test-clock to astra", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "uses: astra-gitops/astra@v1.2.3", `run: ./bin/astra run-due '--test-clock'`, 1)}},
		{name: "ASTRA_NOW in a step", check: Workflows, want: Fail, found: "job run-due sets ASTRA_NOW", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "        env:\n", "        env:\n          ASTRA_NOW: 2030-01-01T00:00:00Z\n", 1)}},
		{name: "ASTRA_NOW for the workflow", check: Workflows, want: Fail, found: "job run-due sets ASTRA_NOW", files: map[string]string{
			".github/workflows/astra.yml": strings.Replace(goodWorkflow, "jobs:\n", "env:\n  ASTRA_NOW: 2030-01-01T00:00:00Z\njobs:\n", 1)}},
		{name: "--now of a tool is not astra's", check: Workflows, want: Pass, files: map[string]string{
			".github/workflows/other.yml": "on: push\npermissions: {}\njobs:\n  x:\n    runs-on: x\n    steps:\n      - run: date --now\n"}},

		// environment
		{name: "no environment", check: Environment, want: Fail, found: "there is no environment astra", modify: func(s *setup) { s.f.env = nil }},
		{name: "any branch deploys", check: Environment, want: Fail, found: "every branch", modify: func(s *setup) { s.f.env = &forge.Environment{Name: "astra", AnyBranch: true} }},
		{name: "protected branches deploy", check: Environment, want: Warn, found: "protected branches", modify: func(s *setup) {
			s.f.env = &forge.Environment{Name: "astra", ProtectedBranches: true}
		}},
		{name: "a tag deploys too", check: Environment, want: Fail, found: "tag v*", modify: func(s *setup) {
			s.f.env.Policies = append(s.f.env.Policies, forge.DeploymentPolicy{Name: "v*", Type: "tag"})
		}},
		{name: "environment unreadable", check: Environment, want: Unknown, found: "may not read", modify: func(s *setup) { s.f.envErr = noAccess }},
		{name: "named environment", check: Environment, want: Fail, found: "no environment ledger", modify: func(s *setup) { s.in.Policies.Trust.Environment = "ledger" }},

		// secrets, workflow defaults, sandbox, approval secret
		{name: "key as a repository secret", check: KeySecret, want: Fail, found: "repository secret", modify: func(s *setup) { s.f.secrets[KeyEnv] = true }},
		{name: "secret with GITHUB_TOKEN", check: KeySecret, want: Unknown, found: "GITHUB_TOKEN can never read secrets", modify: func(s *setup) { s.f.secretErr = noAccess }},
		{name: "write by default", check: WorkflowDefaults, want: Fail, found: `"write"`, modify: func(s *setup) { s.f.workflow.Default = "write" }},
		{name: "actions approve", check: WorkflowDefaults, want: Warn, modify: func(s *setup) { s.f.workflow.CanApprovePullRequestReviews = true }},
		{name: "workflow defaults with GITHUB_TOKEN", check: WorkflowDefaults, want: Unknown, found: "administrator", modify: func(s *setup) { s.f.wfErr = noAccess }},
		{name: "no sandbox", check: Sandbox, want: Fail, found: "no Landlock", modify: func(s *setup) { s.in.Sandbox = func() error { return errors.New("no Landlock") } }},
		{name: "sandbox not wired", check: Sandbox, want: Unknown, modify: func(s *setup) { s.in.Sandbox = nil }},
		{name: "approval secret here", check: ApprovalSecret, want: Pass, modify: func(s *setup) { s.in.ApprovalSecret, s.f.secrets = true, map[string]bool{} }},
		{name: "no approval secret", check: ApprovalSecret, want: Warn, modify: func(s *setup) { s.f.secrets = map[string]bool{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, c.files)
			if c.modify != nil {
				c.modify(s)
			}
			got := s.run(t)[c.check]
			if got.Status != c.want || !strings.Contains(got.Found, c.found) {
				t.Fatalf("%s, want %s with %q", got, c.want, c.found)
			}
			if got.Status != Pass && got.Status != Warn && got.Fix == "" && got.Status != Unknown {
				t.Errorf("%s fails without a fix", got.Name)
			}
			ok, failing := Tier2(mapValues(s.run(t)))
			blocks := got.Tier2 && got.Status != Pass && got.Status != Warn
			listed := false
			for _, f := range failing {
				listed = listed || f.Name == got.Name
			}
			if blocks != listed || (blocks && ok) {
				t.Errorf("tier 2 ok=%v with %s (failing %v)", ok, got, failing)
			}
		})
	}
}

func mapValues(m map[string]Check) []Check {
	var out []Check
	for _, c := range m {
		out = append(out, c)
	}
	return out
}

// The gate asks only what tier 2 needs, and an outage is the error.
func TestTier2OnlyAndOutage(t *testing.T) {
	s := newSetup(t, nil)
	s.in.Tier2Only = true
	checks, err := Run(context.Background(), s.in)
	if err != nil || len(checks) != 6 {
		t.Fatalf("%d checks, %v", len(checks), err)
	}
	if got := strings.Join(s.f.calls, ","); got != "default,rules astra-state,rules main" {
		t.Errorf("calls = %s", got)
	}
	s = newSetup(t, nil)
	s.in.Tier2Only = true
	s.f.defErr = outage
	checks, err = Run(context.Background(), s.in)
	if !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("outage: %v", err)
	}
	ok, failing := Tier2(checks)
	if ok || !strings.Contains(Summary(failing), "default-branch-rules unknown: GitHub did not answer") {
		t.Errorf("outage: ok=%v %s", ok, Summary(failing))
	}
}

func TestFixCommands(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{LedgerRuleset("", "astra-state"), `echo '{"name":"astra ledger","target":"branch","enforcement":"active","conditions":{"ref_name":{"include":["refs/heads/astra-state"],"exclude":[]}},"rules":[{"type":"deletion"},{"type":"non_fast_forward"}]}' | gh api -X POST repos/{owner}/{repo}/rulesets --input -`},
		{EnvironmentCommands("octo/widgets", "astra", "main"), `echo '{"deployment_branch_policy":{"protected_branches":false,"custom_branch_policies":true}}' | gh api -X PUT repos/octo/widgets/environments/astra --input - && gh api -X POST repos/octo/widgets/environments/astra/deployment-branch-policies -f name=main -f type=branch`},
	} {
		if c.got != c.want {
			t.Errorf("got  %s\nwant %s", c.got, c.want)
		}
	}
	if !strings.Contains(DefaultRuleset("octo/widgets"), `"require_code_owner_review":true`) {
		t.Error(DefaultRuleset("octo/widgets"))
	}
}
