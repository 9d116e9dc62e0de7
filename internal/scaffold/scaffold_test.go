package scaffold

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/posture"
	"github.com/astra-gitops/astra/internal/seal"
)

// TestInitValidates: a new repository goes from nothing to a setup that
// validates, and a second init changes nothing.
func TestInitValidates(t *testing.T) {
	root := t.TempDir()
	res, err := Init(root, Options{Owner: "@octo/maintainers"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".github/workflows/astra.yml", ".github/workflows/astra-validate.yml", ".github/workflows/astra-dashboard.yml", "schedules/example.yaml",
		"policies/policies.yaml", "scripts/tools/hello.sh", ".github/CODEOWNERS", ".gitattributes"} {
		if !slices.Contains(res.Created, want) {
			t.Errorf("%s not created: %+v", want, res)
		}
	}
	cfg, diags, err := config.Load(root)
	if err != nil || diags.Errors() > 0 || len(diags) > 0 {
		t.Fatalf("scaffold does not validate: %v %v", err, diags)
	}
	if len(cfg.Schedules) != 2 {
		t.Fatalf("%d schedules", len(cfg.Schedules))
	}
	if st, _ := os.Stat(filepath.Join(root, "scripts/tools/hello.sh")); st.Mode()&0o111 == 0 {
		t.Error("the tool script is not executable")
	}
	owners, _ := os.ReadFile(filepath.Join(root, ".github/CODEOWNERS"))
	for _, p := range []string{"/.astra.yaml", "/.github/", "/policies/", "/schedules/", "/scripts/tools/", "/var/approvals/"} {
		if !strings.Contains(string(owners), "\n"+p+" @octo/maintainers\n") {
			t.Errorf("CODEOWNERS does not give %s an owner:\n%s", p, owners)
		}
	}
	again, err := Init(root, Options{Owner: "@octo/maintainers"})
	if err != nil || len(again.Created)+len(again.Replaced)+len(again.Appended)+len(again.Conflicts) != 0 {
		t.Fatalf("second init changed something: %+v %v", again, err)
	}
}

// TestInitNeverOverwrites: a file that exists with other content is a
// conflict and nothing is written, unless forced; existing CODEOWNERS and
// .gitattributes are appended to.
func TestInitNeverOverwrites(t *testing.T) {
	root := t.TempDir()
	mine := []byte("- {name: mine, cron: \"@daily\", target_tool: tasks_list}\n")
	for p, data := range map[string][]byte{"schedules/example.yaml": mine, ".gitattributes": []byte("*.png binary"), ".github/CODEOWNERS": []byte("* @someone\n")} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), data, 0o644)
	}
	res, err := Init(root, Options{})
	if err != nil || !slices.Equal(res.Conflicts, []string{"schedules/example.yaml"}) {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(root, "policies/policies.yaml")); err == nil {
		t.Fatal("init wrote files despite a conflict")
	}
	res, err = Init(root, Options{Force: true})
	if err != nil || !slices.Equal(res.Kept, []string{"schedules/example.yaml"}) || len(res.Replaced) > 0 || !slices.Contains(res.Appended, ".gitattributes") {
		t.Fatalf("%+v %v", res, err)
	}
	// The user's file stays; astra's version goes beside it.
	if b, _ := os.ReadFile(filepath.Join(root, "schedules/example.yaml")); string(b) != string(mine) {
		t.Fatalf("the user's schedule was replaced:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "schedules/example.yaml"+NewSuffix)); !strings.Contains(string(b), "name: hello") {
		t.Fatalf("astra's version was not written beside it:\n%s", b)
	}
	attrs, _ := os.ReadFile(filepath.Join(root, ".gitattributes"))
	if string(attrs) != "*.png binary\n# astra: show ledger changes as text in git diff (git config diff.astra-ledger.textconv \"astra ledger cat\")\nvar/**/*.ndjson.gz diff=astra-ledger\n" {
		t.Fatalf(".gitattributes:\n%s", attrs)
	}
	owners, _ := os.ReadFile(filepath.Join(root, ".github/CODEOWNERS"))
	if !strings.HasPrefix(string(owners), "* @someone\n") || !strings.Contains(string(owners), "# /policies/ @OWNER\n# /schedules/ @OWNER\n") {
		t.Fatalf("CODEOWNERS:\n%s", owners)
	}
}

// TestInitWidensOldCodeowners: a CODEOWNERS written by an astra that owned
// only policies/ and var/approvals/ gets the full list appended; the later
// lines win in CODEOWNERS.
func TestInitWidensOldCodeowners(t *testing.T) {
	root := t.TempDir()
	old := "# astra: policies and approvals decide what runs unattended; they need an owner's review.\n/policies/ @octo/a\n/var/approvals/ @octo/a\n"
	os.MkdirAll(filepath.Join(root, ".github"), 0o755)
	os.WriteFile(filepath.Join(root, ".github/CODEOWNERS"), []byte(old), 0o644)
	res, err := Init(root, Options{Owner: "@octo/a"})
	if err != nil || !slices.Contains(res.Appended, ".github/CODEOWNERS") {
		t.Fatalf("%+v %v", res, err)
	}
	owners, _ := os.ReadFile(filepath.Join(root, ".github/CODEOWNERS"))
	if !strings.HasPrefix(string(owners), old) || !strings.HasSuffix(string(owners), "/schedules/ @octo/a\n/scripts/tools/ @octo/a\n/var/approvals/ @octo/a\n/var/state/ @octo/a\n") {
		t.Fatalf("CODEOWNERS:\n%s", owners)
	}
}

// TestWorkflowsLint runs actionlint on the generated workflows and on this
// repository's own. CI installs actionlint (.ci/run) and sets
// ASTRA_REQUIRE_ACTIONLINT=1, so there it cannot be skipped.
func TestWorkflowsLint(t *testing.T) {
	bin, err := exec.LookPath("actionlint")
	if err != nil {
		if os.Getenv("ASTRA_REQUIRE_ACTIONLINT") == "1" {
			t.Fatal("actionlint is not on PATH: go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12")
		}
		t.Skip("actionlint not installed (go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12)")
	}
	root := t.TempDir()
	if _, err := Init(root, Options{}); err != nil {
		t.Fatal(err)
	}
	own, _ := filepath.Glob("../../.github/workflows/*.yml")
	gen, _ := filepath.Glob(filepath.Join(root, ".github/workflows/*.yml"))
	if len(own) < 3 || len(gen) != 3 {
		t.Fatalf("workflows: %v %v", own, gen)
	}
	out, err := exec.Command(bin, append(own, gen...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
}

// TestInitKeepsOwnConfig: a repository with its own policies gets the
// workflows but no example that would collide with them.
func TestInitKeepsOwnConfig(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "policies"), 0o755)
	os.WriteFile(filepath.Join(root, "policies/p.yaml"), []byte("actors:\n  - {actor: astra, scopes: [\"*\"]}\n"), 0o644)
	res, err := Init(root, Options{})
	if err != nil || !slices.Contains(res.Skipped, "policies/policies.yaml") || !slices.Contains(res.Created, ".github/workflows/astra.yml") {
		t.Fatalf("%+v %v", res, err)
	}
	if _, diags, _ := config.Load(root); diags.Errors() > 0 {
		t.Fatalf("init broke an existing setup: %v", diags)
	}
}

// TestInitPinsAction: the workflows pin the astra action to a release, the
// one given or this build's; a build from source pins main.
func TestInitPinsAction(t *testing.T) {
	for _, tc := range []struct{ opt, want string }{
		{"v1.2.3", "astra-gitops/astra@v1.2.3\n"},
		{"", "astra-gitops/astra@main\n"}, // tests are not a release build
	} {
		root := t.TempDir()
		if _, err := Init(root, Options{ActionVersion: tc.opt}); err != nil {
			t.Fatal(err)
		}
		for _, wf := range []string{"astra.yml", "astra-validate.yml", "astra-dashboard.yml"} {
			data, err := os.ReadFile(filepath.Join(root, ".github/workflows", wf))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "uses: "+tc.want) || strings.Contains(string(data), versionPlaceholder) {
				t.Errorf("%s with ActionVersion %q does not pin %s:\n%s", wf, tc.opt, tc.want, data)
			}
		}
	}
}

// TestValidateWorkflowSafeOnPullRequests: the validate workflows (the one
// init writes and this repository's own) run on pull_request only, never
// pull_request_target, with read-only permissions, no secrets and no
// persisted token, on the default checkout (the PR's merge commit).
func TestValidateWorkflowSafeOnPullRequests(t *testing.T) {
	root := t.TempDir()
	if _, err := Init(root, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(root, ".github/workflows/astra-validate.yml"), "../../.github/workflows/validate.yml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var wf validateWorkflow
		if err := yaml.Unmarshal(raw, &wf); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, ok := wf.On["pull_request"]; !ok || len(wf.On) != 1 {
			t.Errorf("%s: triggers %v, want pull_request only", file, wf.On)
		}
		if len(wf.Permissions) != 1 || wf.Permissions["contents"] != "read" {
			t.Errorf("%s: permissions %v, want contents: read only", file, wf.Permissions)
		}
		code := withoutComments(string(raw)) // the comments explain why; only the rest counts
		for _, bad := range []string{"pull_request_target", "secrets.", "github.token", "GITHUB_TOKEN"} {
			if strings.Contains(code, bad) {
				t.Errorf("%s mentions %s", file, bad)
			}
		}
		checkJobs(t, file, wf)
	}
}

// validateWorkflow is what TestValidateWorkflowSafeOnPullRequests reads of
// a workflow.
type validateWorkflow struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Permissions any `yaml:"permissions"`
		Steps       []struct {
			Uses string         `yaml:"uses"`
			With map[string]any `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// withoutComments is a YAML file without its comment lines.
func withoutComments(raw string) string {
	var code []string
	for _, line := range strings.Split(raw, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			code = append(code, line)
		}
	}
	return strings.Join(code, "\n")
}

// checkJobs: no job widens the workflow's permissions, and every checkout
// is of the default ref without persisting its token.
func checkJobs(t *testing.T, file string, wf validateWorkflow) {
	t.Helper()
	for name, job := range wf.Jobs {
		if job.Permissions != nil {
			t.Errorf("%s: job %s sets its own permissions", file, name)
		}
		for _, s := range job.Steps {
			if !strings.HasPrefix(s.Uses, "actions/checkout@") {
				continue
			}
			if s.With["persist-credentials"] != false || s.With["ref"] != nil || s.With["repository"] != nil {
				t.Errorf("%s: checkout %v: want persist-credentials: false and the default ref", file, s.With)
			}
		}
	}
}

func TestActionRef(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":                             "v1.2.3",
		"v2.0.0-rc.1":                        "v2.0.0-rc.1",
		"dev":                                "main",
		"v0.0.0-20261123090000-0123456789ab": "main",
		"v1.2.4-dev+abc1234":                 "main",
	} {
		if got := ActionRef(v); got != want {
			t.Errorf("ActionRef(%q) = %q, want %q", v, got, want)
		}
	}
}

// TestInitPassesTheFileChecks: what init writes (with an owner and a
// ledger key) is what astra doctor asks of the files: CODEOWNERS covers
// what decides what runs, every checkout keeps no credentials, the jobs
// that get the ledger key declare its environment and ask for no more
// than they use; the key is listed in the policies. The fan-out workflow
// too, and with another environment.
func TestInitPassesTheFileChecks(t *testing.T) {
	_, pub, err := seal.Generate("astra ledger key")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{Owner: "@octo/maintainers", Approver: "octocat", LedgerKey: pub.String()},
		{Owner: "@octo/maintainers", LedgerKey: pub.String(), FanOut: true, Environment: "ledger"},
	} {
		root := t.TempDir()
		res, err := Init(root, opts)
		if err != nil || !slices.Contains(res.Created, TrustFile) {
			t.Fatalf("%+v %v", res, err)
		}
		cfg, diags, err := config.Load(root)
		if err != nil || diags.Errors() > 0 {
			t.Fatalf("does not validate: %v %v", err, diags)
		}
		if k := cfg.Policies.Trust.LedgerKeys; len(k) != 1 || k[0] != pub.String() || cfg.Policies.Trust.EnvironmentName() != opts.environment() {
			t.Fatalf("trust = %+v", cfg.Policies.Trust)
		}
		checks, _ := posture.Run(context.Background(), posture.Input{Root: root, Policies: &cfg.Policies, Tier2Only: true})
		for _, c := range checks {
			if (c.Name == posture.CodeOwners || c.Name == posture.Workflows) && c.Status != posture.Pass {
				t.Errorf("fan-out %v: %s", opts.FanOut, c)
			}
		}
		again, err := Init(root, opts)
		if err != nil || len(again.Created)+len(again.Replaced)+len(again.Conflicts)+len(again.Skipped) != 0 {
			t.Fatalf("second init: %+v %v", again, err)
		}
	}
}

// TestInitDryRunWritesNothing, a new key included.
func TestInitDryRunWritesNothing(t *testing.T) {
	root := t.TempDir()
	res, err := Init(root, Options{DryRun: true, LedgerKey: "ssh-ed25519 AAAA", Approver: "octocat"})
	if err != nil || !slices.Contains(res.Created, TrustFile) {
		t.Fatalf("%+v %v", res, err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("a dry run wrote %v", entries)
	}
}

// The approver's SSH public key, when init finds one, is listed for them
// under signing_keys, so that `astra approve` can sign; without one the
// example says where it goes. Either way the setup validates.
func TestInitListsTheApproversSigningKey(t *testing.T) {
	_, pub, err := seal.Generate("octocat@laptop")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{pub.String(), ""} {
		root := t.TempDir()
		if _, err := Init(root, Options{Approver: "octocat", SigningKey: key}); err != nil {
			t.Fatal(err)
		}
		cfg, diags, err := config.Load(root)
		if err != nil || diags.Errors() > 0 {
			t.Fatalf("does not validate: %v %v", err, diags)
		}
		got := cfg.Policies.SigningKeys["octocat"]
		if key != "" && (len(got) != 1 || got[0] != key) || key == "" && got != nil {
			t.Fatalf("signing_keys = %v, want %q", cfg.Policies.SigningKeys, key)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "policies/approvals.yaml")); key == "" && !strings.Contains(string(b), "# signing_keys:") {
			t.Fatalf("no hint of where the key goes:\n%s", b)
		}
	}
}

// TestInitChecksBeforeWriting: a setup the check refuses is not written at
// all, and the check sees the repository's schedules with init's files.
func TestInitChecksBeforeWriting(t *testing.T) {
	root := t.TempDir()
	var seen []string
	refuse := func(_, staged string) error {
		for _, f := range []string{"schedules/example.yaml", "policies/approvals.yaml"} {
			if _, err := os.Stat(filepath.Join(staged, f)); err == nil {
				seen = append(seen, f)
			}
		}
		_, diags, err := config.Load(staged)
		if err != nil || diags.Errors() > 0 {
			t.Errorf("the staged setup of a team approver does not validate: %v %v", err, diags)
		}
		return errors.New("refused")
	}
	_, err := Init(root, Options{Approver: "@acme/leads", Email: "me@example.com", Check: refuse})
	if err == nil || len(seen) != 2 {
		t.Fatalf("err %v, staged %v", err, seen)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Fatalf("init wrote %d entries though the check refused", len(entries))
	}
}
