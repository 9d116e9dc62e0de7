package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
	"github.com/astra-gitops/astra/internal/gittest"
)

// ciRun is one cron run the way GitHub Actions does it: a fresh clone of
// the repository, astra with GITHUB_* set, and the clone thrown away.
type ciRun struct {
	t   *testing.T
	srv *githubtest.Server
	env map[string]string
}

func (c *ciRun) run(now string, args ...string) (string, int) {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), "clone")
	gittest.Must(c.t, ".", "clone", "-q", "file://"+c.srv.RepoDir(), dir)
	var stdout, stderr bytes.Buffer
	environ := os.Environ()
	for k, v := range c.env {
		environ = append(environ, k+"="+v) // the last of a name counts
	}
	argv := append([]string{"--repo", dir, "--now", now, "--test-clock"}, args...)
	code := Execute(context.Background(), argv, strings.NewReader(""), &stdout, &stderr, environ)
	c.t.Logf("astra %s -> %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	return stdout.String() + stderr.String(), code
}

// ledger prints the remote's ledger.
func (c *ciRun) ledger() string {
	out, _ := c.run("2026-11-22T23:00:00Z", "ledger", "cat")
	return out
}

const githubPolicies = `tools:
  deployer:
    kind: exec
    command: [sh, tool.sh]
    env: [SIDE]
    tier: external
    requires_approval: true
    risk_level: high
    capabilities: [deploy.prod]
task_policies:
  - {task_type: deployer, auto_execute: false, approver_role: founder}
roles:
  founder: [octocat, "@octo/founders"]
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
trust:
  accept_risk: these tests are about approvals, not the repository's setup (doctor.txtar and posture_gate.txtar are)
`

func mustRead(t *testing.T, srv *githubtest.Server, ref, path string) []byte {
	t.Helper()
	b, ok := srv.ReadFile(t, ref, path)
	if !ok {
		t.Fatalf("%s not on %s", path, ref)
	}
	return b
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func matches(s, pattern string) bool {
	for _, line := range strings.Split(s, "\n") {
		if ok, _ := regexpMatch(pattern, line); ok {
			return true
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }

func regexpMatch(pattern, s string) (bool, error) { return regexp.MatchString(pattern, s) }

// TestDraftApprovalShowsDryRun: an L1 Draft run is dry-run first and its
// approval pull request shows the result (autonomy L1, draft only).
func TestDraftApprovalShowsDryRun(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": `- {id: summary, name: summary, cron: "0 7 * * 1", target_tool: summarize, actor: user_alice, payload: {days: 7}}` + "\n",
		"policies/p.yaml": `tools:
  summarize: {kind: exec, command: [sh, s.sh], tier: 0, dry_run_supported: true, capabilities: [local.summarize]}
actors:
  - {actor: "user_*", scopes: [local.summarize], autonomy: L1_Draft}
roles: {ops: [octocat]}
permissions: {approve: [ops]}
`,
		"s.sh": "if [ \"$ASTRA_DRY_RUN\" = 1 ]; then echo \"draft: would summarize $(cat)\"; else echo summarized; fi\n",
	}})
	ci := &ciRun{t: t, srv: srv, env: map[string]string{"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL}}
	ci.run("2026-11-22T00:00:00Z", "run-due")
	out, code := ci.run("2026-11-23T07:00:30Z", "run-due")
	if code != 0 || !strings.Contains(out, "awaiting_approval summary") {
		t.Fatalf("%s", out)
	}
	pr, _, err := srv.Client(srv.BotToken).PullRequests.Get(context.Background(), "octo", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Dry run (L1 Draft)", `draft: would summarize {"days":7}`, "autonomy L1_Draft", "astra:draft"} {
		if !strings.Contains(pr.GetBody(), want) && !strings.Contains(labelNames(pr.Labels), want) {
			t.Errorf("draft PR lacks %q:\n%s", want, pr.GetBody())
		}
	}
}

func labelNames(ls []*github.Label) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return strings.Join(out, ",")
}
