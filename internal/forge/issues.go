package forge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
)

// FileAt reads path at ref (branch, tag or commit SHA) with the contents
// API. A missing file or ref is ErrNotFound; a repository the token cannot
// see is reported as such, not as a missing file.
func (c *Client) FileAt(ctx context.Context, ref, p string) ([]byte, error) {
	if err := checkPath(p); err != nil {
		return nil, c.failf("read %s at %s: %v", p, ref, err)
	}
	fc, dir, _, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, p, &github.RepositoryContentGetOptions{Ref: ref})
	if isStatus(err, http.StatusNotFound) {
		// GitHub answers 404 for a missing file and for an invisible
		// repository alike; tell them apart.
		if _, _, rerr := c.gh.Repositories.Get(ctx, c.owner, c.repo); isStatus(rerr, http.StatusNotFound) {
			return nil, c.fail(rerr, "read %s at %s", p, ref)
		}
	}
	if err != nil {
		return nil, c.fail(err, "read %s at %s", p, ref)
	}
	if fc == nil || dir != nil {
		return nil, c.failf("read %s at %s: it is a directory", p, ref)
	}
	data, err := fileContent(fc)
	if err != nil {
		return nil, c.failf("read %s at %s: %v", p, ref, err)
	}
	return data, nil
}

var (
	loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	slugRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// IsApprover reports whether login is allowed to approve. allowed entries
// are logins ("alice", "@alice"; compared case-insensitively like GitHub)
// or teams "@org/team-slug", checked with GET
// /orgs/{org}/teams/{slug}/memberships/{user} (state "active"; a pending
// invitation does not count). Logins are checked first, without API calls.
// If no entry matches and a team could not be checked (missing team, token
// without organization access), it returns false and the error: it fails
// closed. A team GitHub could not answer for (5xx, network, a rate limit
// not waited out) makes the error of kind errkind.ErrInfra: an outage, not
// an answer; an entry that is neither a login nor a team is ErrUsage.
func (c *Client) IsApprover(ctx context.Context, login string, allowed []string) (bool, error) {
	login = strings.TrimPrefix(strings.TrimSpace(login), "@")
	if login == "" {
		return false, nil
	}
	type team struct{ org, slug string }
	var teams []team
	for _, a := range allowed {
		a = strings.TrimPrefix(strings.TrimSpace(a), "@")
		if org, slug, ok := strings.Cut(a, "/"); ok {
			if !loginRE.MatchString(org) || !slugRE.MatchString(slug) {
				return false, errkind.Usage(c.failf("approver %q is neither a login nor @org/team-slug", a))
			}
			teams = append(teams, team{org, slug})
			continue
		}
		if strings.EqualFold(a, login) {
			return true, nil
		}
	}
	if !loginRE.MatchString(login) {
		return false, nil // bots ("name[bot]") and odd strings are never team members
	}
	var errs []error
	for _, t := range teams {
		m, _, err := c.gh.Teams.GetTeamMembershipBySlug(ctx, t.org, t.slug, login)
		if err == nil {
			if m.GetState() == "active" {
				return true, nil
			}
			continue
		}
		if !isStatus(err, http.StatusNotFound) {
			errs = append(errs, c.fail(err, "check whether %s is in @%s/%s", login, t.org, t.slug))
			continue
		}
		// 404: not a member, or no such team, or the token cannot see it.
		if _, _, terr := c.gh.Teams.GetTeamBySlug(ctx, t.org, t.slug); terr != nil {
			if isStatus(terr, http.StatusNotFound) {
				errs = append(errs, c.failf("team @%s/%s not found, or the token cannot read it "+
					"(a workflow's GITHUB_TOKEN cannot read organization teams: use a GitHub App or fine-grained token "+
					"with organization `members: read`, or list approvers by login)", t.org, t.slug))
			} else {
				errs = append(errs, c.fail(terr, "read team @%s/%s", t.org, t.slug))
			}
		}
	}
	return false, errors.Join(errs...)
}

// markerRE matches astra's hidden comment markers.
var markerRE = regexp.MustCompile(`\s*<!-- astra:[^>]*-->`)

// maxMarkerKey bounds the key written into a marker; a longer key is
// written as its hash.
const maxMarkerKey = 200

// markerFor is the hidden HTML comment CommentIssue appends for dedupeKey.
// Any key may be given (a run id has '#', a chained step's key '>'): every
// byte outside letters, digits and _.:/@+=#- is written as %XX, so nothing
// in a key can end the comment, and two keys never share a marker. Keys
// made only of those characters keep the markers earlier versions wrote.
func markerFor(dedupeKey string) string {
	var b strings.Builder
	for i := 0; i < len(dedupeKey); i++ {
		c := dedupeKey[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:/@+=#-", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	key := b.String()
	if len(key) > maxMarkerKey {
		sum := sha256.Sum256([]byte(dedupeKey))
		key = "sha256-" + hex.EncodeToString(sum[:])
	}
	return "<!-- astra:" + key + " -->"
}

// CommentIssue comments on an issue or pull request. With a dedupeKey, the
// comment carries the hidden marker <!-- astra:<dedupeKey> --> and nothing
// is posted if a comment containing that marker already exists; such a
// comment is also retried after a 5xx (re-checking first, so a comment
// GitHub did store is not posted twice). Without a dedupeKey a 5xx is not
// retried: the comment may or may not exist. Every comment of the issue
// is read for the check; see CommentIssueSince.
func (c *Client) CommentIssue(ctx context.Context, issue int, body, dedupeKey string) error {
	return c.CommentIssueSince(ctx, issue, body, dedupeKey, time.Time{})
}

// CommentIssueSince is CommentIssue for a caller that knows that no
// comment with dedupeKey can be older than since (by GitHub's clock: leave
// a margin): only the comments updated since then are read for the check
// (GitHub's since parameter), so a tracking issue with any number of
// comments costs a page. The zero time reads them all.
func (c *Client) CommentIssueSince(ctx context.Context, issue int, body, dedupeKey string, since time.Time) error {
	marker := ""
	if dedupeKey != "" {
		marker = markerFor(dedupeKey)
		body = strings.TrimRight(body, "\n") + "\n\n" + marker
	}
	if strings.TrimSpace(body) == "" {
		return c.failf("comment on #%d: empty comment", issue)
	}
	if n := utf8.RuneCountInString(body); n > maxBody {
		return c.failf("comment on #%d: %d characters; GitHub accepts at most %d", issue, n, maxBody)
	}
	for attempt := 1; ; attempt++ {
		if marker != "" {
			comments, err := c.comments(ctx, issue, since)
			if err != nil {
				return c.fail(err, "comment on #%d", issue)
			}
			for _, cm := range comments {
				if strings.Contains(cm.GetBody(), marker) {
					return nil
				}
			}
		}
		_, _, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, issue, &github.IssueComment{Body: ptr(body)})
		if err == nil {
			return nil
		}
		if marker == "" || !isStatus(err, 500, 502, 503, 504) || attempt > c.maxRetries {
			return c.fail(err, "comment on #%d", issue)
		}
		if err := c.sleep(ctx, backoff(attempt)); err != nil {
			return c.fail(err, "comment on #%d", issue)
		}
	}
}

func (c *Client) comments(ctx context.Context, issue int, since time.Time) ([]*github.IssueComment, error) {
	return listAll(func(o github.ListOptions) ([]*github.IssueComment, *github.Response, error) {
		opts := &github.IssueListCommentsOptions{ListOptions: o}
		if !since.IsZero() {
			opts.Since = &since
		}
		return c.gh.Issues.ListComments(ctx, c.owner, c.repo, issue, opts)
	})
}

// CreateIssue opens an issue and returns its number and html URL. A 5xx is
// not retried (GitHub may have created the issue; a retry could duplicate
// it); rate limits are.
func (c *Client) CreateIssue(ctx context.Context, title, body string, labels []string) (number int, url string, err error) {
	switch {
	case strings.TrimSpace(title) == "":
		return 0, "", c.failf("create issue: empty title")
	case utf8.RuneCountInString(body) > maxBody:
		return 0, "", c.failf("create issue %q: body has %d characters; GitHub accepts at most %d", title, utf8.RuneCountInString(body), maxBody)
	}
	req := &github.IssueRequest{Title: ptr(title), Body: ptr(body)}
	if len(labels) > 0 {
		req.Labels = &labels
	}
	is, _, err := c.gh.Issues.Create(ctx, c.owner, c.repo, req)
	if err != nil {
		return 0, "", c.fail(err, "create issue %q", title)
	}
	return is.GetNumber(), is.GetHTMLURL(), nil
}

// RepositoryDispatch sends a repository_dispatch event (eventType at most
// 100 characters; payload nil or a JSON object with at most 10 top-level
// keys, GitHub's limits). Unlike most events, a dispatch made with a
// workflow's GITHUB_TOKEN does start workflows. It is retried after a 5xx:
// a duplicate dispatch starts a second astra run, which the ledger's
// idempotency keys make harmless.
func (c *Client) RepositoryDispatch(ctx context.Context, eventType string, payload json.RawMessage) error {
	if eventType == "" || utf8.RuneCountInString(eventType) > 100 {
		return c.failf("repository_dispatch %q: the event type must have 1 to 100 characters", eventType)
	}
	opts := github.DispatchRequestOptions{EventType: eventType}
	if len(payload) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
			return c.failf("repository_dispatch %q: the payload must be a JSON object", eventType)
		}
		if len(obj) > 10 {
			return c.failf("repository_dispatch %q: the payload has %d top-level keys; GitHub accepts at most 10", eventType, len(obj))
		}
		opts.ClientPayload = &payload
	}
	if _, _, err := c.gh.Repositories.Dispatch(retryablePOST(ctx), c.owner, c.repo, opts); err != nil {
		return c.fail(err, "repository_dispatch %q", eventType)
	}
	return nil
}
