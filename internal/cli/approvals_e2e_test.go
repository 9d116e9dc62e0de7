package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// TestApprovalAttacks drives approvals end to end, the way GitHub Actions
// and people do: each run-due is a fresh clone of a real bare repository
// behind the GitHub test server, and people merge, close and push through
// the API. Every attack must leave the tool unrun and be recorded in the
// ledger, with and without ASTRA_APPROVAL_SECRET (the ledger, not the
// signature, is what holds), and no approval state may stop the other
// schedules.
func TestApprovalAttacks(t *testing.T) {
	for _, secret := range []string{"", "shared-approval-secret"} {
		name := "without secret"
		if secret != "" {
			name = "with secret"
		}
		t.Run(name, func(t *testing.T) { approvalAttacks(t, secret) })
	}
}

func approvalAttacks(t *testing.T, secret string) {
	srv, side, ci := approvalRig(t, secret)
	runDue := func(now string) string {
		t.Helper()
		out, code := ci.run(now, "run-due")
		if code != 0 {
			t.Fatalf("run-due at %s exited %d:\n%s", now, code, out)
		}
		return out
	}
	ran := func() string { return strings.TrimSpace(readFile(t, side)) }

	runDue("2026-11-22T08:00:00Z")
	if out := runDue("2026-11-22T09:00:30Z"); strings.Count(out, "awaiting_approval") != 7 {
		t.Fatalf("want seven approval requests:\n%s", out)
	}
	prs := pendingPRs(t, ci)

	gh := srv.Client(srv.BotToken)
	checkApprovalPRBody(t, srv, gh, prs["deploy_a"])
	if users, teams := srv.RequestedReviewers(prs["deploy_a"]); !slices.Equal(users, []string{"octocat"}) || !slices.Equal(teams, []string{"founders"}) {
		t.Errorf("review requested from %v and teams %v, want octocat and founders", users, teams)
	}
	tokenOf := func(id string) []byte {
		return mustRead(t, srv, "astra/approve/"+id, "var/approvals/pending/"+id+".token")
	}
	if signed := strings.Contains(string(tokenOf("deploy_a")), `"signature": "hmac-sha256:`); signed != (secret != "") {
		t.Fatalf("token signed %v with secret %q", signed, secret)
	}

	// A second run opens no duplicate and records no second request.
	runDue("2026-11-22T09:05:00Z")
	if n := srv.CountRequests("POST", "/repos/octo/widgets/pulls"); n != 7 {
		t.Fatalf("a later run opened another pull request: %d", n)
	}

	// What people do. a: an approver merges (control).
	srv.Merge(t, prs["deploy_a"], "tok-octocat")
	// b: someone who is not an approver merges.
	srv.Merge(t, prs["deploy_b"], "tok-mallory")
	// c: an approver closes it: rejected.
	srv.Close(t, prs["deploy_c"], "tok-octocat", "not today")
	// e: the token is edited on the branch (a longer expiry), then an
	// approver (through a team) merges it.
	srv.CommitFiles(t, "astra/approve/deploy_e", map[string][]byte{
		"var/approvals/pending/deploy_e.token": []byte(strings.Replace(string(tokenOf("deploy_e")),
			`"expires_at": "2026-11-23T09:00:00Z"`, `"expires_at": "2027-11-23T09:00:00Z"`, 1)),
	}, "extend the approval")
	srv.Merge(t, prs["deploy_e"], "tok-fiona")
	// f: a byte-identical copy of the pending token lands on main before
	// anyone merges.
	srv.CommitFiles(t, "main", map[string][]byte{"var/approvals/pending/deploy_f.token": tokenOf("deploy_f")}, "sneak an approval in")
	// g: a token naming an unrelated pull request an approver merged.
	docs := openDocsPR(t, srv, gh)
	srv.Merge(t, docs, "tok-octocat")
	forged := regexp.MustCompile(`"pr": \d+`).ReplaceAllString(string(tokenOf("deploy_g")), `"pr": `+itoa(docs))
	srv.CommitFiles(t, "main", map[string][]byte{"var/approvals/pending/deploy_g.token": []byte(forged)}, "approve g")

	out := runDue("2026-11-22T09:30:00Z")
	if !strings.Contains(out, "ran               deploy_a @ 2026-11-22 09:00Z") || !strings.Contains(out, "ran               tick") {
		t.Fatalf("the approved run or the other schedule did not run:\n%s", out)
	}
	if got := ran(); got != "deploy_a@2026-11-22T09:00:00Z#1" {
		t.Fatalf("side file: %q (only deploy_a may have run)", got)
	}
	l := ci.ledger()
	for _, want := range []string{
		`"event":"approval.approved","schedule_id":"deploy_a".*"pr":` + itoa(prs["deploy_a"]) + `,"by":"octocat"`,
		`"event":"approval.consumed","schedule_id":"deploy_a"`,
		`"event":"approval.refused","schedule_id":"deploy_b".*merged by mallory, who may not approve`,
		`"event":"approval.rejected","schedule_id":"deploy_c".*"pr":` + itoa(prs["deploy_c"]) + `,"by":"octocat".*"comment":"not today"`,
		`"event":"approval.refused","schedule_id":"deploy_e".*not the commit astra wrote`,
		`"event":"approval.ignored","schedule_id":"deploy_f".*before pull request #` + itoa(prs["deploy_f"]) + ` was merged`,
		`"event":"approval.refused","schedule_id":"deploy_g".*not one astra wrote`,
	} {
		if !matches(l, want) {
			t.Errorf("ledger lacks %s", want)
		}
	}
	if _, ok := srv.ReadFile(t, "main", "var/approvals/pending/deploy_a.token"); ok {
		t.Error("the used token stayed on main")
	}
	if _, ok := srv.ReadFile(t, "main", "var/approvals/pending/deploy_g.token"); ok {
		t.Error("the forged token stayed on main")
	}

	// f: the real merge still counts although its copy was planted first.
	srv.Merge(t, prs["deploy_f"], "tok-octocat")
	runDue("2026-11-22T09:40:00Z")
	if got := ran(); got != "deploy_a@2026-11-22T09:00:00Z#1\ndeploy_f@2026-11-22T09:00:00Z#1" {
		t.Fatalf("after f's merge: %q", got)
	}

	// a: the used token put back on main, as it was and re-encoded.
	srv.CommitFiles(t, "main", map[string][]byte{"var/approvals/pending/deploy_a.token": tokenOf("deploy_a")}, "replay")
	runDue("2026-11-22T09:50:00Z")
	srv.CommitFiles(t, "main", map[string][]byte{"var/approvals/pending/deploy_a.token": []byte(strings.ReplaceAll(string(tokenOf("deploy_a")), "  ", "\t"))}, "replay, re-encoded")
	runDue("2026-11-22T09:55:00Z")
	l = ci.ledger()
	if !matches(l, `"event":"approval.refused","schedule_id":"deploy_a".*already used`) || !matches(l, `"event":"approval.refused","schedule_id":"deploy_a".*not one astra wrote`) {
		t.Error("the replayed tokens were not refused in the ledger")
	}

	// d: merged after its request expired: recorded, never closed (it is
	// merged), and every other schedule keeps running.
	srv.Merge(t, prs["deploy_d"], "tok-octocat")
	out = runDue("2026-11-22T10:30:00Z")
	if !strings.Contains(out, "ran               tick") {
		t.Fatalf("the other schedule stopped:\n%s", out)
	}
	if !matches(ci.ledger(), `"event":"approval.expired","schedule_id":"deploy_d".*merged by octocat at .* after the request expired`) {
		t.Error("the late merge was not recorded as expired")
	}

	// b: the next slot opens a new pull request: a refused merge does not
	// wedge the schedule.
	out = runDue("2026-11-23T09:00:30Z")
	if !regexp.MustCompile(`awaiting_approval deploy_b @ 2026-11-23 09:00Z .*/pull/\d+`).MatchString(out) {
		t.Fatalf("deploy_b did not ask again:\n%s", out)
	}
	if got := strings.Count(ran(), "\n") + 1; got != 2 {
		t.Fatalf("%d approved runs in total, want 2", got)
	}
	if out, code := ci.run("2026-11-23T09:01:00Z", "ledger", "verify"); code != 0 {
		t.Fatalf("ledger does not verify:\n%s", out)
	}
}

// approvalRig is a repository of seven tier-2 schedules and a tier-0 one
// behind the GitHub test server, with an approver (octocat), one through a
// team (fiona) and a writer who is not (mallory).
func approvalRig(t *testing.T, secret string) (*githubtest.Server, string, *ciRun) {
	var sched strings.Builder
	sched.WriteString("schedules:\n  - {id: tick, name: tick, cron: \"*/10 * * * *\", target_tool: ticker}\n")
	for _, name := range []string{"deploy_a", "deploy_b", "deploy_c", "deploy_d", "deploy_e", "deploy_f", "deploy_g"} {
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
		"policies/t.yaml":  "tools:\n  ticker: {kind: exec, command: [sh, tick.sh], tier: 0}\n",
		"tool.sh":          "echo \"$ASTRA_RUN_ID\" >> \"$SIDE\"\n",
		"tick.sh":          "echo tick\n",
	}})
	srv.AddUser("tok-octocat", "octocat")
	srv.AddUser("tok-mallory", "mallory")
	srv.AddUser("tok-fiona", "fiona")
	srv.AddTeamMember("octo", "founders", "fiona")
	side := filepath.Join(t.TempDir(), "side.log")
	return srv, side, &ciRun{t: t, srv: srv, env: map[string]string{
		"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL,
		"ASTRA_APPROVAL_SECRET": secret, "SIDE": side, "ASTRA_SANDBOX_WRITABLE": filepath.Dir(side), "GITHUB_ACTIONS": "",
	}}
}

// pendingPRs maps each pending request's schedule to its pull request.
func pendingPRs(t *testing.T, ci *ciRun) map[string]int {
	t.Helper()
	prs := map[string]int{}
	listOut, _ := ci.run("2026-11-22T09:01:00Z", "approvals", "list", "--json")
	var rows []struct {
		ScheduleID string `json:"schedule_id"`
		PR         int    `json:"pr"`
	}
	if err := json.Unmarshal([]byte(listOut[:strings.LastIndex(listOut, "]")+1]), &rows); err != nil {
		t.Fatalf("approvals list --json: %v\n%s", err, listOut)
	}
	for _, r := range rows {
		prs[r.ScheduleID] = r.PR
	}
	if len(prs) != 7 {
		t.Fatalf("pending requests: %v", prs)
	}
	return prs
}

// checkApprovalPRBody: the pull request says in plain words what will
// run, and who may approve, and holds no secret.
func checkApprovalPRBody(t *testing.T, srv *githubtest.Server, gh *github.Client, number int) {
	t.Helper()
	pr, _, err := gh.PullRequests.Get(context.Background(), "octo", "widgets", number)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	for _, want := range []string{"deploy_a", "`deployer`", `runs sh tool\.sh`, "risk high", "not idempotent", "| Safety tier | 2 (external) |",
		"2026-11-22T09:00:00Z", "Expires | 2026-11-23T09:00:00Z", "role `founder`: octocat\\, @\u200docto\\/founders",
		`safety tier 2 \(external\)`, `task policy for deployer \(global\) has auto\_execute\: false`, `"api_token": "[REDACTED]"`,
		"Merge this pull request to approve one run"} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "sekrit-abc123") || strings.Contains(body, srv.BotToken) {
		t.Fatal("a secret reached the PR body")
	}
}

// openDocsPR opens an unrelated pull request (a README change) as octocat.
func openDocsPR(t *testing.T, srv *githubtest.Server, gh *github.Client) int {
	t.Helper()
	ctx := context.Background()
	ref, _, err := gh.Git.GetRef(ctx, "octo", "widgets", "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Git.CreateRef(ctx, "octo", "widgets", &github.Reference{Ref: github.String("refs/heads/docs"), Object: ref.Object}); err != nil {
		t.Fatal(err)
	}
	srv.CommitFiles(t, "docs", map[string][]byte{"README.md": []byte("# widgets, documented\n")}, "docs")
	pr, _, err := srv.Client("tok-octocat").PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{
		Title: github.String("Docs"), Head: github.String("docs"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	return pr.GetNumber()
}
