package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
	"github.com/astra-gitops/astra/internal/model"
)

func client(t *testing.T) (*githubtest.Server, *forge.Client) {
	t.Helper()
	srv := githubtest.New(t, githubtest.Config{})
	c, err := forge.New(forge.Options{Token: srv.BotToken, Repository: srv.Repository(), APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// A payload written in YAML (`issue: 1`) holds an int, not a JSON float:
// the comment must go to issue 1, not to "issue 0" (which lists every
// comment of the repository).
func TestIssueCommentFromYAMLPayload(t *testing.T) {
	srv, c := client(t)
	run := GitHub(c)
	ctx := context.Background()
	n, _, err := c.CreateIssue(ctx, "tracking", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tool := &model.Tool{Name: "note", Kind: model.KindGitHub, Action: "issue_comment"}
	out, err := run(ctx, tool, map[string]any{"issue": n, "body": "from yaml"}, false)
	if err != nil || out != "commented on issue #1" {
		t.Fatalf("got %q, %v", out, err)
	}
	if got := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); got != 1 {
		t.Fatalf("%d comments posted on #1, want 1", got)
	}
	// From JSON (a trigger payload) the same number is a float64.
	if _, err := run(ctx, tool, map[string]any{"issue": float64(n), "body": "from json"}, false); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	for _, p := range []map[string]any{{"body": "no issue"}, {"issue": 0}, {"issue": 1.5}, {"issue": "1"}} {
		if _, err := run(ctx, tool, p, false); err == nil || !strings.Contains(err.Error(), "issue") {
			t.Errorf("payload %v: want an error about issue, got %v", p, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("a refused payload made %d API requests", n)
	}
}

// client_payload is optional for repository_dispatch, as on GitHub.
func TestRepositoryDispatchWithoutClientPayload(t *testing.T) {
	srv, c := client(t)
	run := GitHub(c)
	tool := &model.Tool{Name: "kick", Kind: model.KindGitHub, Action: "repository_dispatch"}
	if _, err := run(context.Background(), tool, map[string]any{"event_type": "deploy"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := run(context.Background(), tool, map[string]any{"event_type": "deploy", "client_payload": map[string]any{"env": "prod"}}, false); err != nil {
		t.Fatal(err)
	}
	d := srv.Dispatches()
	if len(d) != 2 || d[0].EventType != "deploy" || (len(d[0].Payload) != 0 && string(d[0].Payload) != "{}") || string(d[1].Payload) != `{"env":"prod"}` {
		t.Fatalf("dispatches: %+v", d)
	}
}

func TestIntegerPayloads(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
		ok   bool
	}{{nil, 7, true}, {3, 3, true}, {int64(4), 4, true}, {uint64(5), 5, true}, {float64(6), 6, true}, {6.5, 0, false}, {"6", 0, false}, {1e300, 0, false}} {
		got, err := integer(map[string]any{"k": c.v}, "k", 7)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("integer(%v) = %d, %v", c.v, got, err)
		}
	}
}

// A tracking issue with 10,000 comments: issue_comment's duplicate check
// reads only the comments of its window (GitHub's since), one page, and
// still finds a comment of the window with the same dedupe_key.
func TestIssueCommentOnALongIssue(t *testing.T) {
	srv, c := client(t)
	run := GitHub(c)
	ctx := context.Background()
	n, _, err := c.CreateIssue(ctx, "tracking", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-400 * 24 * time.Hour)
	srv.AddComments(t, n, "someone", 10_000, func(i int) time.Time { return old.Add(time.Duration(i) * time.Minute) })
	tool := &model.Tool{Name: "note", Kind: model.KindGitHub, Action: "issue_comment"}
	p := map[string]any{"issue": n, "body": "daily report", "dedupe_key": "report-2026-11-22"}
	srv.ResetRequests()
	for range 2 {
		if _, err := run(ctx, tool, p, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.CountRequests("GET", "/repos/octo/widgets/issues/1/comments"); got != 2 {
		t.Fatalf("%d pages of comments read for two comments, want 2", got)
	}
	if got := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); got != 1 {
		t.Fatalf("%d comments posted, want 1 (the second has the same dedupe_key)", got)
	}
	for _, bad := range []any{0, 367, "7"} {
		if _, err := run(ctx, tool, map[string]any{"issue": n, "body": "x", "dedupe_days": bad}, false); err == nil || !strings.Contains(err.Error(), "dedupe_days") {
			t.Errorf("dedupe_days %v: %v", bad, err)
		}
	}
}
