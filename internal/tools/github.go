package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/model"
)

// GitHubAPI is the part of the GitHub client the github tools use
// (internal/forge).
type GitHubAPI interface {
	Repository() string
	CreateIssue(ctx context.Context, title, body string, labels []string) (int, string, error)
	CommentIssueSince(ctx context.Context, issue int, body, dedupeKey string, since time.Time) error
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

// DedupeWindow is how far back issue_comment looks for a comment with the
// same dedupe_key (payload dedupe_days changes it): GitHub lists an
// issue's comments oldest first, bounded only by since, so an unbounded
// check of a tracking issue that gets a comment every few minutes would
// read every one of them, every time.
const DedupeWindow = 35 * 24 * time.Hour

// commentIssue comments the payload's body on its issue, once per
// dedupe_key within dedupe_days (default DedupeWindow).
func commentIssue(ctx context.Context, api GitHubAPI, p map[string]any, dry bool) (string, error) {
	n, err := integer(p, "issue", 0)
	if err != nil {
		return "", err
	}
	if n <= 0 {
		// Issue 0 would list every comment of the repository.
		return "", fmt.Errorf("payload issue must be the number of an issue or pull request (a positive whole number)")
	}
	days, err := integer(p, "dedupe_days", int(DedupeWindow/(24*time.Hour)))
	if err != nil || days < 1 || days > 366 {
		return "", fmt.Errorf("payload dedupe_days must be a whole number of days from 1 to 366")
	}
	if dry {
		return fmt.Sprintf("would comment on issue #%d of %s", n, api.Repository()), nil
	}
	since := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	if err := api.CommentIssueSince(ctx, n, str(p, "body"), str(p, "dedupe_key"), since); err != nil {
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
