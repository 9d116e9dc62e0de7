package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// TestBudgetAlertsReachPeople: each threshold and the pause reach the
// issue budget.alert_route names once per period, and the webhook too;
// later runs of the period add none. A webhook that fails is recorded
// (notify.sent failed) and warned about, and the run goes on.
func TestBudgetAlertsReachPeople(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts = append(posts, r.Header.Get("X-Astra-Alert-Id"))
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": `- {id: spend, name: spend, cron: "0 9,10 * * *", target_tool: spend, critical: true, budget: {max_cost_usd: 0.60}}
- {id: other, name: other, cron: "0 11 * * *", target_tool: spend, budget: {max_cost_usd: 0.60}}
`,
		"policies/p.yaml": `tools:
  spend: {kind: exec, command: [echo, '::astra-usage {"cost_usd":0.50}'], tier: 0}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
budget:
  daily_limit_usd: 1.00
  monthly_limit_usd: 100
  alert_thresholds: [0.5]
  on_limit_reached: pause-non-critical
  alert_route: {issue: 1, webhook: "` + hook.URL + `/budget"}
`,
	}})
	ctx := context.Background()
	if _, _, err := srv.Client(srv.BotToken).Issues.Create(ctx, "octo", "widgets", &github.IssueRequest{Title: github.String("budget")}); err != nil {
		t.Fatal(err)
	}
	ci := &ciRun{t: t, srv: srv, env: map[string]string{"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL}}
	ci.run("2026-11-22T00:00:00Z", "run-due")
	// 50% of the day, then 100% and the pause (critical work runs past
	// pause-non-critical's limit); the webhook fails every time, and the
	// runs go on.
	for _, now := range []string{"2026-11-22T09:00:30Z", "2026-11-22T10:00:30Z"} {
		out, code := ci.run(now, "run-due")
		if code != 0 || !strings.Contains(out, "ran") || !strings.Contains(out, "budget alert not delivered: POST "+hook.URL+"/budget: 503") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	}
	// The day is paused: the next run is held and raises nothing new.
	if out, code := ci.run("2026-11-22T11:00:30Z", "run-due"); code != 0 || !strings.Contains(out, "paused") || strings.Contains(out, "alert") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	comments, _, err := srv.Client(srv.BotToken).Issues.ListComments(ctx, "octo", "widgets", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, c := range comments {
		bodies = append(bodies, c.GetBody())
	}
	all := strings.Join(bodies, "\n---\n")
	if len(comments) != 3 || !strings.Contains(all, "day spend $1.00 is 100% of the $1.00 limit") || !strings.Contains(all, "pause-non-critical: day spend $1.00 reached $1.00") ||
		!strings.Contains(all, "<!-- astra:budget:day:2026-11-22:0.5 -->") {
		t.Fatalf("%d comments:\n%s", len(comments), all)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(posts, " ") != "budget:day:2026-11-22:0.5 budget:day:2026-11-22:1 budget:paused:day:2026-11-22:1" {
		t.Fatalf("webhook posts: %q", posts)
	}
	led := ci.ledger()
	if !matches(led, `"event":"notify.sent",.*"idempotency_key":"budget:paused:day:2026-11-22:1".*"status":"ok","reason":"budget".*"pr":1`) ||
		!matches(led, `"event":"notify.sent",.*"idempotency_key":"budget:paused:day:2026-11-22:1".*"status":"failed","reason":"budget".*"error":"POST .*: 503`) {
		t.Fatalf("ledger:\n%s", led)
	}
}
