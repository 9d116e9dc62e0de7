package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// TestNotifyIssue: a notify route to an issue comments once per run, with
// the run id (which has a '#') as its dedupe marker, against the fake
// GitHub; the ledger records notify.sent as ok.
func TestNotifyIssue(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": `- {id: note, name: note, cron: "0 9 * * *", target_tool: say, result_route: {type: notify, issue: 1}}` + "\n",
		"policies/p.yaml": `tools:
  say: {kind: exec, command: [echo, all good], tier: 0}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
	}})
	ctx := context.Background()
	if _, _, err := srv.Client(srv.BotToken).Issues.Create(ctx, "octo", "widgets", &github.IssueRequest{Title: github.String("results")}); err != nil {
		t.Fatal(err)
	}
	ci := &ciRun{t: t, srv: srv, env: map[string]string{"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL}}
	ci.run("2026-11-22T00:00:00Z", "run-due")
	if out, code := ci.run("2026-11-22T09:00:30Z", "run-due"); code != 0 || !strings.Contains(out, "ran") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	comments, _, err := srv.Client(srv.BotToken).Issues.ListComments(ctx, "octo", "widgets", 1, nil)
	if err != nil || len(comments) != 1 {
		t.Fatalf("%d comments, %v", len(comments), err)
	}
	body := comments[0].GetBody()
	if !strings.Contains(body, "astra ran **`note`**") || !strings.Contains(body, "all good") || !strings.HasSuffix(body, "<!-- astra:note@2026-11-22T09:00:00Z#1 -->") {
		t.Fatalf("comment: %q", body)
	}
	if led := ci.ledger(); !matches(led, `"event":"notify.sent","schedule_id":"note".*"status":"ok".*"pr":1`) {
		t.Fatalf("ledger:\n%s", led)
	}
}
