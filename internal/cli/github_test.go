package cli

import (
	"bytes"
	"context"
	"encoding/json"
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
	getenv := func(k string) string {
		if v, ok := c.env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	argv := append([]string{"--repo", dir, "--now", now}, args...)
	code := Execute(context.Background(), argv, strings.NewReader(""), &stdout, &stderr, getenv)
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
approvers:
  founder: [octocat, "@octo/founders"]
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`

// TestApprovalPullRequests: a due tier-2 run opens one approval pull request
// that says what will run; merge by an approver runs it once; a merge by
// anyone else, a close, an expiry, an edited token and a token pushed past
// the pull request all keep it from running, and are recorded.
func TestApprovalPullRequests(t *testing.T) {
	var sched strings.Builder
	sched.WriteString("schedules:\n")
	for _, name := range []string{"deploy_a", "deploy_b", "deploy_c", "deploy_d", "deploy_e", "deploy_f"} {
		ttl := "24h"
		if name == "deploy_d" {
			ttl = "1h"
		}
		sched.WriteString("  - {id: " + name + ", name: " + name + `, cron: "0 9 * * *", target_tool: deployer, approval_ttl: ` + ttl +
			`, payload: {env: prod, api_token: sekrit-abc123}}` + "\n")
	}
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": sched.String(),
		"policies/p.yaml":  githubPolicies,
		"tool.sh":          "echo \"$ASTRA_RUN_ID\" >> \"$SIDE\"\n",
	}})
	srv.AddUser("tok-octocat", "octocat")
	srv.AddUser("tok-mallory", "mallory")
	srv.AddUser("tok-fiona", "fiona")
	srv.AddTeamMember("octo", "founders", "fiona")
	side := filepath.Join(t.TempDir(), "side.log")
	ci := &ciRun{t: t, srv: srv, env: map[string]string{
		"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL,
		"ASTRA_APPROVAL_SECRET": "shared-approval-secret", "SIDE": side, "GITHUB_ACTIONS": "",
	}}

	if _, code := ci.run("2026-11-22T08:00:00Z", "run-due"); code != 0 {
		t.Fatal("first run failed")
	}
	out, code := ci.run("2026-11-22T09:00:30Z", "run-due")
	if code != 0 || strings.Count(out, "awaiting_approval") != 6 {
		t.Fatalf("want six approval requests:\n%s", out)
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/pulls"); n != 6 {
		t.Fatalf("%d pull requests opened, want 6", n)
	}
	prs := map[string]int{}
	listOut, _ := ci.run("2026-11-22T09:01:00Z", "approvals", "list", "--json")
	var rows []struct {
		ScheduleID string `json:"schedule_id"`
		PR         int    `json:"pr"`
		URL        string `json:"url"`
	}
	if err := json.Unmarshal([]byte(listOut[:strings.LastIndex(listOut, "]")+1]), &rows); err != nil {
		t.Fatalf("approvals list --json: %v\n%s", err, listOut)
	}
	for _, r := range rows {
		prs[r.ScheduleID] = r.PR
		if !strings.HasPrefix(r.URL, "https://github.com/octo/widgets/pull/") {
			t.Errorf("approvals list URL %q", r.URL)
		}
	}
	if len(prs) != 6 {
		t.Fatalf("pending requests: %v", prs)
	}

	// The pull request says in plain words what will run.
	gh := srv.Client(srv.BotToken)
	pr, _, err := gh.PullRequests.Get(context.Background(), "octo", "widgets", prs["deploy_a"])
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	for _, want := range []string{"deploy_a", "`deployer`", "runs sh tool.sh", "risk high", "not idempotent", "`astra`", "| Safety tier | 2 (external) |",
		"2026-11-22T09:00:00Z", "Expires | 2026-11-23T09:00:30Z", "role `founder`: octocat, @octo/founders",
		"safety tier 2 (external)", "task policy for deployer (global) has auto_execute: false", "tool deployer requires approval",
		`"api_token": "[REDACTED]"`, `"env": "prod"`, "Merge this pull request to approve one run"} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "sekrit-abc123") || strings.Contains(body, srv.BotToken) {
		t.Fatal("a secret reached the PR body")
	}
	var labels []string
	for _, l := range pr.Labels {
		labels = append(labels, l.GetName())
	}
	if strings.Join(labels, ",") != "astra:approval,tier-2" {
		t.Errorf("labels %v", labels)
	}
	tok, ok := srv.ReadFile(t, "astra/approve/deploy_a", "var/approvals/pending/deploy_a.token")
	if !ok || !strings.Contains(string(tok), `"pr": `+itoa(prs["deploy_a"])) || !strings.Contains(string(tok), `"signature": "hmac-sha256:`) {
		t.Fatalf("token on the approval branch:\n%s", tok)
	}

	// A second run opens no duplicate and records no second request.
	if _, code := ci.run("2026-11-22T09:05:00Z", "run-due"); code != 0 {
		t.Fatal("second run failed")
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/pulls"); n != 6 {
		t.Fatalf("a later run opened another pull request: %d", n)
	}
	if n := strings.Count(ci.ledger(), `"event":"approval.requested","schedule_id":"deploy_a"`); n != 1 {
		t.Fatalf("approval.requested recorded %d times", n)
	}

	// What humans do.
	srv.Merge(t, prs["deploy_a"], "tok-octocat")                    // an approver
	srv.Merge(t, prs["deploy_b"], "tok-mallory")                    // not an approver
	srv.Close(t, prs["deploy_c"], "tok-octocat", "not today")       // rejected
	srv.CommitFiles(t, "astra/approve/deploy_e", map[string][]byte{ // edited, then merged
		"var/approvals/pending/deploy_e.token": []byte(strings.Replace(string(mustRead(t, srv, "astra/approve/deploy_e", "var/approvals/pending/deploy_e.token")),
			`"expires_at": "2026-11-23T09:00:30Z"`, `"expires_at": "2027-11-23T09:00:30Z"`, 1)),
	}, "extend the approval")
	srv.Merge(t, prs["deploy_e"], "tok-fiona")    // fiona is an approver through @octo/founders
	srv.CommitFiles(t, "main", map[string][]byte{ // straight onto main, no merged pull request
		"var/approvals/pending/deploy_f.token": mustRead(t, srv, "astra/approve/deploy_f", "var/approvals/pending/deploy_f.token"),
	}, "sneak an approval in")

	out, code = ci.run("2026-11-22T09:30:00Z", "run-due")
	if code != 0 || !strings.Contains(out, "ran               deploy_a @ 2026-11-22 09:00Z") {
		t.Fatalf("approved run did not run:\n%s", out)
	}
	if got := strings.TrimSpace(readFile(t, side)); got != "deploy_a@2026-11-22T09:00:00Z#1" {
		t.Fatalf("side file: %q (only deploy_a may have run)", got)
	}
	l := ci.ledger()
	for _, want := range []string{
		`"event":"approval.approved","schedule_id":"deploy_a".*"status":"approved".*"pr":` + itoa(prs["deploy_a"]) + `,"by":"octocat"`,
		`"event":"approval.consumed","schedule_id":"deploy_a"`,
		`"event":"approval.refused","schedule_id":"deploy_b".*mallory merged pull request #` + itoa(prs["deploy_b"]) + ` but is not an approver`,
		`"event":"approval.rejected","schedule_id":"deploy_c".*"error":"not today","pr":` + itoa(prs["deploy_c"]) + `,"by":"octocat"`,
		`"event":"approval.refused","schedule_id":"deploy_e".*token signature does not match`,
		`"event":"approval.refused","schedule_id":"deploy_f".*was not merged: the token reached the branch another way`,
	} {
		if !matches(l, want) {
			t.Errorf("ledger lacks %s", want)
		}
	}
	if _, ok := srv.ReadFile(t, "main", "var/approvals/pending/deploy_a.token"); ok {
		t.Error("the used token stayed on main")
	}

	// The used approval never runs again; deploy_d's request expires and
	// its pull request is closed with a comment.
	out, _ = ci.run("2026-11-22T10:30:00Z", "run-due")
	if strings.Contains(out, "ran               deploy_a") {
		t.Fatal("deploy_a ran twice")
	}
	if !matches(ci.ledger(), `"event":"approval.expired","schedule_id":"deploy_d"`) {
		t.Error("deploy_d did not expire")
	}
	d, _, err := gh.PullRequests.Get(context.Background(), "octo", "widgets", prs["deploy_d"])
	if err != nil || d.GetState() != "closed" || d.GetMerged() {
		t.Fatalf("expired PR: %v %s", err, d.GetState())
	}
	comments, _, _ := gh.Issues.ListComments(context.Background(), "octo", "widgets", prs["deploy_d"], nil)
	if len(comments) == 0 || !strings.Contains(comments[len(comments)-1].GetBody(), "expired") {
		t.Error("no expiry comment on the closed PR")
	}
	if got := strings.Count(readFile(t, side), "\n"); got != 1 {
		t.Fatalf("%d runs in total, want 1", got)
	}
	if _, code := ci.run("2026-11-22T10:31:00Z", "ledger", "verify"); code != 0 {
		t.Fatal("ledger does not verify")
	}
}

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
// approval pull request shows the result (seed 003 L1_Draft).
func TestDraftApprovalShowsDryRun(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": `- {id: summary, name: summary, cron: "0 7 * * 1", target_tool: summarize, actor: user_alice, payload: {days: 7}}` + "\n",
		"policies/p.yaml": `tools:
  summarize: {kind: exec, command: [sh, s.sh], tier: 0, dry_run_supported: true, capabilities: [local.summarize]}
actors:
  - {actor: "user_*", scopes: [local.summarize], autonomy: L1_Draft}
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
