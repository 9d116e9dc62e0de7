package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
)

// ErrNotFound is matched (errors.Is) by every error caused by a GitHub 404.
var ErrNotFound = errors.New("not found")

// ErrMerged is returned by ClosePullRequest when the pull request was merged
// (approved) before astra could close it.
var ErrMerged = errors.New("pull request is already merged")

// APIError is an error answer from GitHub, with a hint saying what to fix.
type APIError struct {
	Op       string // e.g. "POST /repos/o/r/pulls" (path relative to the API root, no query)
	Status   int
	Message  string // what GitHub said, with validation details
	Hint     string // what to do about it; may be empty
	Attempts int    // requests made, including retries

	gh error // the go-github error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GitHub returned %d for %s", e.Status, e.Op)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	switch {
	case e.Hint != "" && e.Message != "":
		fmt.Fprintf(&b, ": %s; GitHub said: %q", e.Hint, e.Message)
	case e.Hint != "":
		fmt.Fprintf(&b, ": %s", e.Hint)
	case e.Message != "":
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Unwrap exposes ErrNotFound for 404s, errkind.ErrInfra for GitHub's own
// failures (5xx, after retries), and go-github's own error value. Other
// answers carry no kind: whether a 403 or a 404 is the configuration's
// fault or an outage to report is the caller's to say.
func (e *APIError) Unwrap() []error {
	out := []error{e.gh}
	switch {
	case e.Status == http.StatusNotFound:
		out = append(out, ErrNotFound)
	case e.Status >= 500:
		out = append(out, errkind.ErrInfra)
	}
	return out
}

// RateLimitError means GitHub's rate limit was not waited out: it asked for
// a longer wait than MaxWait, or it kept limiting past MaxRetries.
type RateLimitError struct {
	Op        string
	Secondary bool          // secondary (abuse) limit rather than the hourly quota
	Wait      time.Duration // how long GitHub asked to wait
	Reset     time.Time     // when the hourly quota resets (primary limit only)
	MaxWait   time.Duration
	Attempts  int
}

func (e *RateLimitError) Error() string {
	kind := "primary rate limit (hourly request quota)"
	if e.Secondary {
		kind = "secondary rate limit"
	}
	when := ""
	if !e.Reset.IsZero() {
		when = " (until " + e.Reset.UTC().Format(time.RFC3339) + ")"
	}
	if e.Wait > e.MaxWait {
		return fmt.Sprintf("GitHub %s hit for %s: it asks to wait %s%s, longer than the %s astra waits; try again later",
			kind, e.Op, e.Wait.Round(time.Second), when, e.MaxWait)
	}
	return fmt.Sprintf("GitHub %s hit for %s: still limited after %d attempts; try again later", kind, e.Op, e.Attempts)
}

// Unwrap classifies a limit not waited out as an outage: later it passes.
func (e *RateLimitError) Unwrap() error { return errkind.ErrInfra }

// TransportError means GitHub could not be reached (after retries, when the
// request was safe to retry).
type TransportError struct {
	Op       string
	Attempts int
	msg      string // redacted
	err      error
}

func (e *TransportError) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("cannot reach GitHub for %s (after %d attempts): %s", e.Op, e.Attempts, e.msg)
	}
	return fmt.Sprintf("cannot reach GitHub for %s: %s", e.Op, e.msg)
}

// Unwrap exposes the cause, and errkind.ErrInfra: GitHub was not reached.
func (e *TransportError) Unwrap() []error { return []error{errkind.ErrInfra, e.err} }

// opError prefixes what astra was doing; its message is redacted once, at
// construction, so no path can print the token.
type opError struct {
	msg string
	err error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.err }

// fail describes err (a go-github or transport error) for humans: what
// astra was doing, what GitHub answered and what to fix.
func (c *Client) fail(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	inner := c.explain(err)
	msg := fmt.Sprintf(format, args...) + ": " + inner.Error()
	return &opError{msg: "forge: " + c.redact(msg), err: inner}
}

// failf is a plain error with the same redaction and prefix.
func (c *Client) failf(format string, args ...any) error {
	return &opError{msg: "forge: " + c.redact(fmt.Sprintf(format, args...))}
}

// explain turns go-github's errors into APIError with a hint.
func (c *Client) explain(err error) error {
	var (
		rl *RateLimitError
		te *TransportError
		er *github.ErrorResponse
		gr *github.RateLimitError
		ga *github.AbuseRateLimitError
	)
	switch {
	case errors.As(err, &rl):
		return rl
	case errors.As(err, &te):
		return te
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &er):
		// Redact in place too, so even errors.As(err, *github.ErrorResponse)
		// cannot show the token.
		er.Message = c.redact(er.Message)
		for i := range er.Errors {
			er.Errors[i].Message = c.redact(er.Errors[i].Message)
		}
		return c.apiError(er.Response, er.Message, er.Errors, err)
	case errors.As(err, &gr): // not expected: the transport hides rate-limit headers
		return c.apiError(gr.Response, gr.Message, nil, err)
	case errors.As(err, &ga):
		return c.apiError(ga.Response, ga.Message, nil, err)
	}
	return err
}

func (c *Client) apiError(resp *http.Response, message string, details []github.Error, gh error) *APIError {
	e := &APIError{Status: resp.StatusCode, gh: gh, Attempts: 1}
	if resp.Request != nil {
		e.Op = resp.Request.Method + " " + apiPath(resp.Request.URL, c.basePath)
	}
	if n, err := strconv.Atoi(resp.Header.Get(attemptsHeader)); err == nil {
		e.Attempts = n
	}
	msgs := []string{}
	if message != "" {
		msgs = append(msgs, message)
	}
	for _, d := range details {
		switch {
		case d.Message != "":
			msgs = append(msgs, d.Message)
		case d.Code != "":
			msgs = append(msgs, fmt.Sprintf("%s.%s %s", d.Resource, d.Field, d.Code))
		}
	}
	e.Message = c.redact(strings.Join(msgs, ": "))
	method, p, _ := strings.Cut(e.Op, " ")
	e.Hint = c.hint(resp, method, p, e.Message)
	return e
}

// hint says what to do about an error answer, by status and endpoint.
func (c *Client) hint(resp *http.Response, method, p, msg string) string {
	repo := c.owner + "/" + c.repo
	rest, inRepo := c.inRepo(p)
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Sprintf("GitHub rejected the token (bad or expired credentials): check that GITHUB_TOKEN is set for this step and is a token for %s", c.host)
	case http.StatusForbidden:
		return forbiddenHint(resp, method, p, msg, repo, rest, inRepo)
	case http.StatusNotFound:
		if !inRepo {
			return ""
		}
		return notFoundHint(resp, msg, repo, rest)
	case http.StatusConflict:
		return "the branch or file changed meanwhile; run again"
	case http.StatusUnprocessableEntity:
		return "GitHub refused the request as invalid"
	}
	if resp.StatusCode >= 500 {
		return "GitHub is having trouble (see https://www.githubstatus.com); run again later"
	}
	return ""
}

// inRepo returns p below /repos/owner/repo, which GitHub matches without
// regard to case.
func (c *Client) inRepo(p string) (rest string, ok bool) {
	prefix := "/repos/" + c.owner + "/" + c.repo
	if len(p) >= len(prefix) && strings.EqualFold(p[:len(prefix)], prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

func forbiddenHint(resp *http.Response, method, p, msg, repo, rest string, inRepo bool) string {
	switch {
	case resp.Header.Get("X-GitHub-SSO") != "":
		return "the token is not authorized for the organization's SAML single sign-on: authorize it for the organization"
	case strings.Contains(strings.ToLower(msg), "not permitted to create or approve pull requests"):
		return "the repository does not let GitHub Actions open pull requests: enable Settings → Actions → General → Workflow permissions → \"Allow GitHub Actions to create and approve pull requests\" (or use a GitHub App token)"
	case strings.HasPrefix(p, "/orgs/"):
		return "the token cannot read organization team membership (a workflow's GITHUB_TOKEN never can): use a GitHub App or fine-grained token with organization `members: read`, or list approvers by login"
	case inRepo:
		if perm := permissionFor(method, rest); perm != "" {
			return fmt.Sprintf("the token lacks %s (add it under `permissions:` in the workflow)", perm)
		}
		return fmt.Sprintf("the token is not allowed to do this in %s", repo)
	}
	return ""
}

// notFoundHint names what was not found in repo: rest is the path below it.
func notFoundHint(resp *http.Response, msg, repo, rest string) string {
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	notVisible := fmt.Sprintf("repository %s not found or the token cannot see it", repo)
	switch {
	case rest == "":
		return notVisible + " (check GITHUB_REPOSITORY and the token's repository access)"
	case seg[0] == "git" && len(seg) > 3 && seg[2] == "heads":
		return fmt.Sprintf("branch %s not found in %s", strings.Join(seg[3:], "/"), repo)
	case seg[0] == "contents":
		if strings.HasPrefix(msg, "No commit found for the ref") {
			return fmt.Sprintf("ref %s not found in %s", resp.Request.URL.Query().Get("ref"), repo)
		}
		return fmt.Sprintf("%s not found at ref %q in %s", strings.Join(seg[1:], "/"), resp.Request.URL.Query().Get("ref"), repo)
	case seg[0] == "pulls" && len(seg) > 1:
		return fmt.Sprintf("pull request #%s not found in %s", seg[1], repo)
	case seg[0] == "issues" && len(seg) > 1:
		return fmt.Sprintf("issue or pull request #%s not found in %s", seg[1], repo)
	case seg[0] == "dispatches":
		return notVisible + " (repository_dispatch needs `contents: write`)"
	}
	return fmt.Sprintf("not found in %s, or the token cannot see that repository", repo)
}

// permissionFor names the GitHub Actions workflow permission an endpoint
// needs ("permissions:" keys), for 403 hints.
func permissionFor(method, rest string) string {
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	read := method == http.MethodGet || method == http.MethodHead
	switch seg[0] {
	case "pulls":
		if len(seg) == 3 && seg[2] == "merge" && !read {
			return "`contents: write`"
		}
		if read {
			return "`pull-requests: read`"
		}
		return "`pull-requests: write`"
	case "git", "contents":
		if read {
			return "`contents: read`"
		}
		return "`contents: write`"
	case "issues":
		if len(seg) == 1 {
			return "`issues: write`"
		}
		if read {
			return "`issues: read` (or `pull-requests: read` for a pull request)"
		}
		return "`issues: write` (or `pull-requests: write` for a pull request)"
	case "dispatches":
		return "`contents: write`"
	}
	return ""
}

// isStatus reports whether err carries an APIError with one of the codes.
func isStatus(err error, codes ...int) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		var er *github.ErrorResponse
		if !errors.As(err, &er) || er.Response == nil {
			return false
		}
		ae = &APIError{Status: er.Response.StatusCode}
	}
	for _, c := range codes {
		if ae.Status == c {
			return true
		}
	}
	return false
}

// ghMessages is everything GitHub said in an error answer (message and
// validation details), for matching known conditions.
func ghMessages(err error) string {
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		return ""
	}
	parts := []string{er.Message}
	for _, d := range er.Errors {
		parts = append(parts, d.Message)
	}
	return strings.Join(parts, "\n")
}
