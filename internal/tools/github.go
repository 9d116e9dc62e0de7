package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/astra-gitops/astra/internal/model"
)

// GitHubAPI is the part of the GitHub client the github tools use
// (internal/forge).
type GitHubAPI interface {
	Repository() string
	CreateIssue(ctx context.Context, title, body string, labels []string) (int, string, error)
	CommentIssue(ctx context.Context, issue int, body, dedupeKey string) error
	RepositoryDispatch(ctx context.Context, eventType string, payload json.RawMessage) error
}

// GitHub implements kind: github tools with api; nil api (no GITHUB_TOKEN)
// returns nil, and the executor then says what is missing.
func GitHub(api GitHubAPI) func(context.Context, *model.Tool, map[string]any, bool) (string, error) {
	if api == nil {
		return nil
	}
	return func(ctx context.Context, t *model.Tool, p map[string]any, dry bool) (string, error) {
		switch t.Action {
		case "create_issue":
			return createIssue(ctx, api, p, dry)
		case "issue_comment":
			return commentIssue(ctx, api, p, dry)
		case "repository_dispatch":
			return dispatch(ctx, api, p, dry)
		}
		return "", fmt.Errorf("unknown github action %q", t.Action)
	}
}

// createIssue opens an issue with the payload's title, body and labels.
func createIssue(ctx context.Context, api GitHubAPI, p map[string]any, dry bool) (string, error) {
	if dry {
		return fmt.Sprintf("would open an issue %q on %s", str(p, "title"), api.Repository()), nil
	}
	var labels []string
	if l, ok := p["labels"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				labels = append(labels, s)
			}
		}
	}
	n, url, err := api.CreateIssue(ctx, str(p, "title"), str(p, "body"), labels)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("opened issue #%d %s", n, url), nil
}

// commentIssue comments the payload's body on its issue, once per
// dedupe_key.
func commentIssue(ctx context.Context, api GitHubAPI, p map[string]any, dry bool) (string, error) {
	n, err := integer(p, "issue", 0)
	if err != nil {
		return "", err
	}
	if n <= 0 {
		// Issue 0 would list every comment of the repository.
		return "", fmt.Errorf("payload issue must be the number of an issue or pull request (a positive whole number)")
	}
	if dry {
		return fmt.Sprintf("would comment on issue #%d of %s", n, api.Repository()), nil
	}
	if err := api.CommentIssue(ctx, n, str(p, "body"), str(p, "dedupe_key")); err != nil {
		return "", err
	}
	return fmt.Sprintf("commented on issue #%d", n), nil
}

// dispatch sends a repository_dispatch of the payload's event_type, with
// its client_payload when it has one.
func dispatch(ctx context.Context, api GitHubAPI, p map[string]any, dry bool) (string, error) {
	if dry {
		return fmt.Sprintf("would send repository_dispatch %q to %s", str(p, "event_type"), api.Repository()), nil
	}
	var cp json.RawMessage
	if v, ok := p["client_payload"]; ok && v != nil { // optional, as on GitHub
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("payload client_payload: %v", err)
		}
		cp = b
	}
	if err := api.RepositoryDispatch(ctx, str(p, "event_type"), cp); err != nil {
		return "", err
	}
	return "dispatched " + str(p, "event_type"), nil
}
