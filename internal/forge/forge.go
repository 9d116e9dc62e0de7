// Package forge is the GitHub API client astra uses: approval pull
// requests, their outcome (merged = approved, closed = rejected) and
// files, comments, issues, repository_dispatch, approver checks, and the
// repository settings astra's safety rests on (settings.go).
//
// It wraps go-github with careful API use: rate limits (primary and
// secondary) are waited out as GitHub asks, within bounds; 5xx answers are
// retried with exponential backoff and jitter, within bounds; other errors
// are turned into messages that say what to fix (a missing workflow
// permission, an invisible repository). The token never appears in an error.
//
// About the GitHub Actions GITHUB_TOKEN: pull requests it opens (and pushes
// it makes) do not start other workflows (no pull_request or push runs), so
// checks required by branch protection will not run on approval pull
// requests opened with it; repository_dispatch and workflow_dispatch events
// are the exception and do start workflows. It also cannot read organization
// team membership, so "@org/team" approvers need a GitHub App or
// fine-grained token with organization "members: read".
package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
)

// defaultAPIURL is GitHub's REST API root (GITHUB_API_URL on github.com).
const defaultAPIURL = "https://api.github.com"

// Defaults for Options.
const (
	DefaultMaxRetries = 4
	DefaultMaxWait    = 60 * time.Second
	defaultTimeout    = 30 * time.Second
)

// Options configures a Client.
type Options struct {
	Token      string       // GITHUB_TOKEN (never logged, never in an error message)
	Repository string       // "owner/repo" (GITHUB_REPOSITORY)
	APIURL     string       // GITHUB_API_URL, default https://api.github.com; tests point it at githubtest
	HTTPClient *http.Client // used for each attempt (its Timeout bounds one attempt); default: 30 s timeout
	// MaxRetries bounds retries after rate limits, 5xx and network errors:
	// 0 means DefaultMaxRetries, a negative value disables retries.
	MaxRetries int
	// MaxWait is the longest single wait astra accepts for a rate limit;
	// when GitHub asks for more, the call fails with a RateLimitError.
	// 0 means DefaultMaxWait.
	MaxWait time.Duration
	// Sleep waits between attempts; injectable for tests. The default
	// sleeps for real and returns ctx.Err() early when ctx is done.
	Sleep func(context.Context, time.Duration) error
}

// Client talks to the GitHub API for one repository.
type Client struct {
	gh         *github.Client
	owner      string
	repo       string
	host       string
	maxRetries int
	sleep      func(context.Context, time.Duration) error
	redact     func(string) string
	basePath   string
}

var (
	ownerRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	repoRE  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// New returns a client for opts.Repository. It fails with a clear message
// (of kind errkind.ErrUsage) when the token is empty or the repository is
// not "owner/repo".
func New(opts Options) (*Client, error) {
	token := strings.TrimSpace(opts.Token)
	if token == "" {
		return nil, errkind.Usage(errors.New("forge: the GitHub token is empty: set GITHUB_TOKEN " +
			"(in a workflow step: env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})"))
	}
	// Real tokens are 40+ characters; replacing a very short "token"
	// everywhere would only garble messages.
	redact := func(s string) string {
		if len(token) < 8 {
			return s
		}
		return strings.ReplaceAll(s, token, "[REDACTED]")
	}
	owner, repo, ok := strings.Cut(opts.Repository, "/")
	if !ok || !ownerRE.MatchString(owner) || !repoRE.MatchString(repo) || repo == "." || repo == ".." {
		return nil, errkind.Usage(errors.New(redact(fmt.Sprintf("forge: GITHUB_REPOSITORY %q is not of the form owner/repo", opts.Repository))))
	}
	api := opts.APIURL
	if api == "" {
		api = defaultAPIURL
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errkind.Usage(errors.New(redact(fmt.Sprintf("forge: GITHUB_API_URL %q is not an http(s) URL", api))))
	}
	if u.User != nil {
		return nil, errkind.Usage(errors.New("forge: GITHUB_API_URL must not contain credentials; pass the token as GITHUB_TOKEN"))
	}
	u.RawQuery, u.Fragment = "", ""
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	maxRetries := opts.MaxRetries
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	maxWait := opts.MaxWait
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	inner := opts.HTTPClient
	if inner == nil {
		inner = &http.Client{Timeout: defaultTimeout}
	}
	basePath := strings.TrimSuffix(u.Path, "/")
	rt := &transport{
		inner:      inner,
		token:      token,
		redact:     redact,
		maxRetries: maxRetries,
		maxWait:    maxWait,
		sleep:      sleep,
		now:        time.Now,
		basePath:   basePath,
	}
	// The outer client has no timeout: retries and rate-limit waits happen
	// inside its transport, bounded by MaxRetries and MaxWait; each attempt
	// is bounded by the inner client's Timeout.
	gh := github.NewClient(&http.Client{Transport: rt})
	gh.BaseURL = u
	gh.UserAgent = "astra (github.com/astra-gitops/astra)"
	return &Client{
		gh:         gh,
		owner:      owner,
		repo:       repo,
		host:       u.Host,
		maxRetries: maxRetries,
		sleep:      sleep,
		redact:     redact,
		basePath:   basePath,
	}, nil
}

// Repository is "owner/repo".
func (c *Client) Repository() string { return c.owner + "/" + c.repo }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pages bounds how far list calls paginate (100 items per page).
const maxPages = 50

// listAll pages through a list endpoint.
func listAll[T any](fetch func(opts github.ListOptions) ([]T, *github.Response, error)) ([]T, error) {
	var out []T
	opts := github.ListOptions{PerPage: 100}
	for i := 0; i < maxPages; i++ {
		items, resp, err := fetch(opts)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
	return out, fmt.Errorf("more than %d pages", maxPages)
}

func ptr[T any](v T) *T { return &v }
