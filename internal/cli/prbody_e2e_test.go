package cli

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// hostileMarkdown is what a draft, a description or a role could carry to
// dress an approval request up: a heading, a team mention, a tracking
// image, HTML and a fence that would close the one around it.
const hostileMarkdown = "## Safe to merge\n@acme/leads approved this ![](http://track.example/p.gif) [docs](http://evil.example)\n" +
	"```\n<img src=http://track.example/i.gif>\n```\n| a | table |"

// TestApprovalPRBodyFencesUntrustedText: in the body of an approval pull
// request on GitHub, the L1 draft, the description, reasons and roles show
// as written and format nothing: no heading, mention, link or image of
// theirs outside a code block, and no code block they could close. The
// pull request asks the approvers for their review.
func TestApprovalPRBodyFencesUntrustedText(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Files: map[string]string{
		"schedules/s.yaml": "schedules:\n  - id: drafty\n    name: drafty\n    cron: \"0 9 * * *\"\n    target_tool: drafter\n    autonomy: L1\n" +
			"    description: " + yamlQuote(hostileMarkdown) + "\n",
		"policies/p.yaml": "tools:\n  drafter: {kind: exec, command: [sh, draft.sh], tier: 0, dry_run_supported: true}\n" +
			"task_policies:\n  - {task_type: drafter, approver_role: leads}\n" +
			"roles:\n  leads: [octocat, \"@acme/leads\"]\nactors:\n  - {actor: astra, scopes: [\"*\"], autonomy: L3}\n" +
			"trust:\n  accept_risk: this test is about pull request bodies, not the repository's setup\n",
		"draft.sh": "cat <<'END'\n" + hostileMarkdown + "\n````` five\nEND\n",
	}})
	srv.AddUser("tok-octocat", "octocat")
	ci := &ciRun{t: t, srv: srv, env: map[string]string{
		"GITHUB_TOKEN": srv.BotToken, "GITHUB_REPOSITORY": srv.Repository(), "GITHUB_API_URL": srv.URL, "GITHUB_ACTIONS": "",
	}}
	ci.run("2026-11-22T08:00:00Z", "run-due")
	out, code := ci.run("2026-11-22T09:00:30Z", "run-due")
	if code != 0 || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("run-due exited %d:\n%s", code, out)
	}
	// The approvers' review is requested; a team of another organisation
	// cannot be asked: a warning, recorded with the request, never a stop.
	if !strings.Contains(out, "drafty: review not requested: ") || !strings.Contains(out, "@acme/leads") {
		t.Errorf("no warning about the review not requested:\n%s", out)
	}
	if !regexp.MustCompile(`"event":"approval.requested".*"error":"[^"]*; review not requested: [^"]*@acme/leads`).MatchString(ci.ledger()) {
		t.Errorf("the request does not record the review not requested:\n%s", ci.ledger())
	}
	prs, _, err := srv.Client(srv.BotToken).PullRequests.List(context.Background(), "octo", "widgets", nil)
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests: %v, %v", prs, err)
	}
	if users, teams := srv.RequestedReviewers(prs[0].GetNumber()); !slices.Equal(users, []string{"octocat"}) || len(teams) != 0 {
		t.Errorf("review requested from %v and teams %v, want octocat", users, teams)
	}
	body := prs[0].GetBody()
	outside, fenced := splitFences(t, body)
	if !strings.Contains(fenced, hostileMarkdown+"\n````` five") {
		t.Errorf("the draft's output is not in a code block as it was printed:\n%s", body)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*#`),                    // a heading
		regexp.MustCompile(`(?:^|\W)@[A-Za-z0-9]`),         // a mention
		regexp.MustCompile(`[^\\]\]\(|[^\\]<img|[^\\]!\[`), // a link, an image, HTML
		regexp.MustCompile(`[^\\/]http:`),                  // an autolink
	} {
		if m := bad.FindString(outside); m != "" {
			t.Errorf("%q formats outside code blocks:\n%s", m, outside)
		}
	}
	if !strings.Contains(outside, "@\u200dacme") {
		t.Errorf("the team is not named:\n%s", outside)
	}
}

// splitFences parses fenced code blocks as CommonMark does (a fence of
// three or more backticks closes on a line of at least as many) and
// returns the text outside them and inside them.
func splitFences(t *testing.T, body string) (outside, inside string) {
	t.Helper()
	var out, in strings.Builder
	open := ""
	for _, line := range strings.Split(body, "\n") {
		run := line[:len(line)-len(strings.TrimLeft(line, "`"))]
		switch {
		case open == "" && len(run) >= 3:
			open = run
		case open != "" && len(run) >= len(open) && strings.TrimSpace(line[len(run):]) == "":
			open = ""
		case open != "":
			in.WriteString(line + "\n")
		default:
			out.WriteString(line + "\n")
		}
	}
	if open != "" {
		t.Fatalf("a code block is never closed:\n%s", body)
	}
	return out.String(), in.String()
}

func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
