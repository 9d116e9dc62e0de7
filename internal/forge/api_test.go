package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// openPR gives a test a pull request to read, then forgets the setup's
// requests and sleeps.
func openPR(t *testing.T, srv *githubtest.Server, c *forge.Client, sl *sleeps) forge.PR {
	t.Helper()
	pr, _, err := c.EnsureApprovalPR(context.Background(), approval("s1"))
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	sl.mu.Lock()
	sl.d = nil
	sl.mu.Unlock()
	return pr
}

func equalDurations(a, b []time.Duration) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestSecondaryRateLimitWaitsRetryAfter(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv, c, sl := setup(t)
			pr := openPR(t, srv, c, sl)
			srv.FailNext("GET", "/repos/octo/widgets/pulls/1", status, map[string]string{"Retry-After": "17"})
			got, err := c.PullRequest(context.Background(), pr.Number)
			if err != nil || got.Number != 1 {
				t.Fatalf("PullRequest = %+v, %v", got, err)
			}
			if want := []time.Duration{17 * time.Second}; !equalDurations(sl.got(), want) {
				t.Fatalf("slept %v, want %v", sl.got(), want)
			}
			if n := srv.CountRequests("GET", "/repos/octo/widgets/pulls/1"); n != 2 {
				t.Fatalf("%d requests", n)
			}
		})
	}
}

func TestPrimaryRateLimitWaitsUntilReset(t *testing.T) {
	for _, status := range []int{403, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv, c, sl := setup(t)
			pr := openPR(t, srv, c, sl)
			// GitHub's clock (Date) is what the reset is measured against,
			// whatever the local clock says.
			date := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			srv.FailNext("GET", "/repos/octo/widgets/pulls/*", status, map[string]string{
				"X-RateLimit-Limit":     "5000",
				"X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset":     strconv.FormatInt(date.Add(42*time.Second).Unix(), 10),
				"Date":                  date.Format(http.TimeFormat),
			})
			if _, err := c.PullRequest(context.Background(), pr.Number); err != nil {
				t.Fatal(err)
			}
			if want := []time.Duration{42 * time.Second}; !equalDurations(sl.got(), want) {
				t.Fatalf("slept %v, want %v", sl.got(), want)
			}
		})
	}
}

func TestSecondaryRateLimitWithoutHeadersWaitsAMinute(t *testing.T) {
	srv, c, sl := setup(t)
	pr := openPR(t, srv, c, sl)
	srv.FailNextWith(githubtest.Fault{Method: "GET", Path: "/repos/octo/widgets/pulls/1", Status: 403,
		Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."})
	srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 429, nil)
	if _, err := c.PullRequest(context.Background(), pr.Number); err == nil {
		t.Fatal("expected an error: the second wait (2m) exceeds MaxWait")
	} else if !strings.Contains(err.Error(), "secondary rate limit hit for GET /repos/octo/widgets/pulls/1: it asks to wait 2m0s, longer than the 1m0s astra waits") {
		t.Fatalf("err = %v", err)
	}
	if want := []time.Duration{time.Minute}; !equalDurations(sl.got(), want) {
		t.Fatalf("slept %v, want %v", sl.got(), want)
	}
}

func TestRateLimitBoundedByMaxRetries(t *testing.T) {
	srv, c, sl := setup(t, func(o *forge.Options) { o.MaxRetries = 2 })
	pr := openPR(t, srv, c, sl)
	for i := 0; i < 3; i++ {
		srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 403, map[string]string{"Retry-After": "5"})
	}
	_, err := c.PullRequest(context.Background(), pr.Number)
	var rl *forge.RateLimitError
	if !errors.As(err, &rl) || rl.Attempts != 3 || !rl.Secondary {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "GitHub secondary rate limit hit for GET /repos/octo/widgets/pulls/1: still limited after 3 attempts") {
		t.Fatalf("message: %v", err)
	}
	if want := []time.Duration{5 * time.Second, 5 * time.Second}; !equalDurations(sl.got(), want) {
		t.Fatalf("slept %v, want %v", sl.got(), want)
	}
	if n := srv.CountRequests("GET", "/repos/octo/widgets/pulls/1"); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestRateLimitLongerThanMaxWaitFailsClearly(t *testing.T) {
	srv, c, sl := setup(t)
	pr := openPR(t, srv, c, sl)
	date := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 403, map[string]string{
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     strconv.FormatInt(date.Add(40*time.Minute).Unix(), 10),
		"Date":                  date.Format(http.TimeFormat),
	})
	_, err := c.PullRequest(context.Background(), pr.Number)
	want := "GitHub primary rate limit (hourly request quota) hit for GET /repos/octo/widgets/pulls/1: it asks to wait 40m0s (until 2026-03-01T12:40:00Z), longer than the 1m0s astra waits; try again later"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if len(sl.got()) != 0 {
		t.Fatalf("slept %v", sl.got())
	}
	// MaxWait is configurable.
	srv2, c2, sl2 := setup(t, func(o *forge.Options) { o.MaxWait = 2 * time.Hour })
	pr2 := openPR(t, srv2, c2, sl2)
	srv2.FailNext("GET", "/repos/octo/widgets/pulls/1", 403, map[string]string{"Retry-After": "3600"})
	if _, err := c2.PullRequest(context.Background(), pr2.Number); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{time.Hour}; !equalDurations(sl2.got(), want) {
		t.Fatalf("slept %v, want %v", sl2.got(), want)
	}
}

// spendQuota makes GitHub's answers report an exhausted hourly quota that
// resets resetIn after the answer's Date, for the next n answers.
type spendQuota struct {
	mu      sync.Mutex
	n       int
	resetIn time.Duration
}

func (s *spendQuota) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.n > 0 {
		s.n--
		date := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		resp.Header.Set("Date", date.Format(http.TimeFormat))
		resp.Header.Set("X-RateLimit-Remaining", "0")
		resp.Header.Set("X-RateLimit-Reset", strconv.FormatInt(date.Add(s.resetIn).Unix(), 10))
	}
	return resp, err
}

func TestSpentQuotaOnSuccessWaitsBeforeNextCall(t *testing.T) {
	quota := &spendQuota{}
	srv, c, sl := setup(t, func(o *forge.Options) { o.HTTPClient = &http.Client{Transport: quota} })
	pr := openPR(t, srv, c, sl)
	quota.n, quota.resetIn = 1, 30*time.Second
	if _, err := c.PullRequest(context.Background(), pr.Number); err != nil {
		t.Fatal(err)
	}
	if len(sl.got()) != 0 {
		t.Fatalf("slept before the quota was known to be spent: %v", sl.got())
	}
	if _, err := c.PullRequest(context.Background(), pr.Number); err != nil {
		t.Fatal(err)
	}
	if got := sl.got(); len(got) != 1 || got[0] < 29*time.Second || got[0] > 30*time.Second {
		t.Fatalf("slept %v, want ~30s before the second call", got)
	}

	// Spent for longer than MaxWait: the next call fails without a request.
	quota.n, quota.resetIn = 1, time.Hour
	if _, err := c.PullRequest(context.Background(), pr.Number); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	_, err := c.PullRequest(context.Background(), pr.Number)
	var rl *forge.RateLimitError
	if !errors.As(err, &rl) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, %d requests made", err, len(srv.Requests()))
	}
}

func TestServerErrorsBackOffThenSucceed(t *testing.T) {
	srv, c, sl := setup(t)
	pr := openPR(t, srv, c, sl)
	srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 502, nil)
	srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 503, nil)
	srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 500, nil)
	if _, err := c.PullRequest(context.Background(), pr.Number); err != nil {
		t.Fatal(err)
	}
	got := sl.got()
	if len(got) != 3 {
		t.Fatalf("slept %v, want 3 backoffs", got)
	}
	for i, d := range got {
		hi := time.Second << i
		if d < hi/2 || d > hi {
			t.Errorf("backoff %d = %v, want within [%v, %v]", i+1, d, hi/2, hi)
		}
	}
}

func TestServerErrorsBoundedByMaxRetries(t *testing.T) {
	srv, c, sl := setup(t, func(o *forge.Options) { o.MaxRetries = 3 })
	pr := openPR(t, srv, c, sl)
	for i := 0; i < 5; i++ {
		srv.FailNext("GET", "/repos/octo/widgets/pulls/1", 500, nil)
	}
	_, err := c.PullRequest(context.Background(), pr.Number)
	want := "GitHub returned 500 for GET /repos/octo/widgets/pulls/1 (after 4 attempts): GitHub is having trouble"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
	if len(sl.got()) != 3 || srv.PendingFaults() != 1 {
		t.Fatalf("slept %v, %d faults left", sl.got(), srv.PendingFaults())
	}

	// Retries can be switched off.
	srv2, c2, sl2 := setup(t, func(o *forge.Options) { o.MaxRetries = -1 })
	pr2 := openPR(t, srv2, c2, sl2)
	srv2.FailNext("GET", "/repos/octo/widgets/pulls/1", 503, nil)
	if _, err := c2.PullRequest(context.Background(), pr2.Number); err == nil || len(sl2.got()) != 0 {
		t.Fatalf("MaxRetries -1: err %v, slept %v", err, sl2.got())
	}
}

func TestNonIdempotentPOSTNotRetriedOnServerError(t *testing.T) {
	srv, c, sl := setup(t)
	srv.FailNext("POST", "/repos/octo/widgets/issues", 502, nil)
	_, _, err := c.CreateIssue(context.Background(), "t", "b", nil)
	if err == nil || !strings.Contains(err.Error(), "GitHub returned 502 for POST /repos/octo/widgets/issues") {
		t.Fatalf("err = %v", err)
	}
	if len(sl.got()) != 0 || srv.CountRequests("POST", "/repos/octo/widgets/issues") != 1 {
		t.Fatalf("retried a POST that could duplicate an issue: slept %v", sl.got())
	}
	// But a rate-limited POST is retried: GitHub did not act on it.
	srv.FailNext("POST", "/repos/octo/widgets/issues", 403, map[string]string{"Retry-After": "3"})
	if _, _, err := c.CreateIssue(context.Background(), "t", "b", nil); err != nil {
		t.Fatal(err)
	}
	// Dispatch and keyed comments are safe to repeat and are retried.
	srv.FailNext("POST", "/repos/octo/widgets/dispatches", 503, nil)
	if err := c.RepositoryDispatch(context.Background(), "astra", nil); err != nil || len(srv.Dispatches()) != 1 {
		t.Fatalf("dispatch: %v", err)
	}
	srv.FailNext("POST", "/repos/octo/widgets/issues/1/comments", 502, nil)
	srv.ResetRequests()
	if err := c.CommentIssue(context.Background(), 1, "hello", "k1"); err != nil {
		t.Fatal(err)
	}
	if g, p := srv.CountRequests("GET", "/repos/octo/widgets/issues/1/comments"), srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); g != 2 || p != 2 {
		t.Fatalf("keyed comment after 502: %d lists, %d posts; want a re-check before the retry", g, p)
	}
	if want := []time.Duration{3 * time.Second}; len(sl.got()) != 3 || sl.got()[0] != want[0] {
		t.Fatalf("slept %v", sl.got())
	}
}

func TestForbiddenSaysWhichPermission(t *testing.T) {
	ctx := context.Background()
	srv, c, _ := setup(t)
	srv.FailNext("POST", "/repos/octo/widgets/pulls", 403, nil)
	_, _, err := c.EnsureApprovalPR(ctx, approval("s"))
	want := "GitHub returned 403 for POST /repos/octo/widgets/pulls: the token lacks `pull-requests: write` (add it under `permissions:` in the workflow)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}

	// A token without write access fails at the first write: the branch.
	srv2, c2, _ := setup(t)
	srv2.SetWrite(githubtest.BotLogin, false)
	_, _, err = c2.EnsureApprovalPR(ctx, approval("s"))
	if err == nil || !strings.Contains(err.Error(), "GitHub returned 403 for POST /repos/octo/widgets/git/refs: the token lacks `contents: write`") {
		t.Fatalf("read-only: %v", err)
	}

	srv.FailNextWith(githubtest.Fault{Method: "POST", Path: "/repos/octo/widgets/pulls", Status: 403,
		Message: "GitHub Actions is not permitted to create or approve pull requests."})
	_, _, err = c.EnsureApprovalPR(ctx, approval("s"))
	if err == nil || !strings.Contains(err.Error(), `Allow GitHub Actions to create and approve pull requests`) {
		t.Fatalf("actions not permitted: %v", err)
	}

	srv.FailNext("POST", "/repos/octo/widgets/issues/*/comments", 403, nil)
	err = c.CommentIssue(ctx, 1, "x", "")
	if err == nil || !strings.Contains(err.Error(), "the token lacks `issues: write` (or `pull-requests: write` for a pull request)") {
		t.Fatalf("comment: %v", err)
	}

	srv.FailNext("GET", "/orgs/octo/teams/*/memberships/*", 403, nil)
	_, err = c.IsApprover(ctx, "carol", []string{"@octo/ops"})
	if err == nil || !strings.Contains(err.Error(), "organization `members: read`") {
		t.Fatalf("teams: %v", err)
	}
}

func TestNotFoundRepository(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t, githubtest.Config{Repository: repoName})
	c, err := forge.New(forge.Options{Token: srv.BotToken, Repository: "octo/nope", APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.EnsureApprovalPR(ctx, approval("s"))
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "GitHub returned 404 for GET /repos/octo/nope: repository octo/nope not found or the token cannot see it") {
		t.Fatalf("EnsureApprovalPR: %v", err)
	}
	// FileAt does not report an invisible repository as a missing file.
	_, err = c.FileAt(ctx, "main", "var/approvals/pending/s.token")
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "repository octo/nope not found or the token cannot see it") {
		t.Fatalf("FileAt: %v", err)
	}
	_, c2, _ := setup(t)
	_, _, err = c2.EnsureApprovalPR(ctx, forge.ApprovalRequest{ScheduleID: "s", Base: "release", Title: "t", Path: "a.token", Token: tokenFor("s")})
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "branch release not found in octo/widgets") {
		t.Fatalf("missing base: %v", err)
	}
}

func TestUnauthorized(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: repoName})
	c, err := forge.New(forge.Options{Token: "ghp_revoked_token_123456", Repository: repoName, APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.PullRequest(context.Background(), 1)
	if err == nil || !strings.Contains(err.Error(), "GitHub returned 401 for GET /repos/octo/widgets/pulls/1: GitHub rejected the token") {
		t.Fatalf("err = %v", err)
	}
}

func TestTokenNeverInErrors(t *testing.T) {
	ctx := context.Background()
	srv, c, _ := setup(t, func(o *forge.Options) { o.MaxRetries = 1 })
	secret := srv.BotToken
	var errs []error
	collect := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatal("expected an error")
		}
		errs = append(errs, err)
	}

	// GitHub (or a proxy) echoing the token back in a message.
	echo := "bad token " + secret + " in Authorization"
	for _, status := range []int{400, 403, 404, 422, 500} {
		srv.FailNextWith(githubtest.Fault{Path: "/repos/octo/widgets/pulls/7", Status: status, Message: echo})
		srv.FailNextWith(githubtest.Fault{Path: "/repos/octo/widgets/pulls/7", Status: status, Message: echo})
		_, err := c.PullRequest(ctx, 7)
		collect(err)
	}
	srv.FailNext("GET", "/repos/octo/widgets/pulls/7", 403, map[string]string{"Retry-After": "86400"})
	_, err := c.PullRequest(ctx, 7)
	collect(err)
	_, err = c.FileAt(ctx, "main", "missing")
	collect(err)

	// Unreachable server.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	dc, _ := forge.New(forge.Options{Token: secret, Repository: repoName, APIURL: dead.URL, MaxRetries: -1})
	_, err = dc.PullRequest(ctx, 1)
	collect(err)
	var te *forge.TransportError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "cannot reach GitHub for GET /repos/octo/widgets/pulls/1") {
		t.Errorf("unreachable: %v", err)
	}

	// Configuration mistakes that put the token where it does not belong.
	_, err = forge.New(forge.Options{Token: secret, Repository: secret})
	collect(err)
	_, err = forge.New(forge.Options{Token: secret, Repository: repoName, APIURL: "https://x:" + secret + "@api.github.com"})
	collect(err)

	for _, err := range errs {
		for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, secret) {
				t.Errorf("token in error: %s", s)
			}
		}
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), secret) {
				t.Errorf("token in wrapped error: %s", e.Error())
			}
		}
	}
	// Nor in what the fake recorded.
	for _, r := range srv.Requests() {
		if strings.Contains(fmt.Sprintf("%+v", r), secret) {
			t.Fatalf("token recorded: %+v", r)
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	cases := []struct {
		opts forge.Options
		want string
	}{
		{forge.Options{Repository: "o/r"}, "the GitHub token is empty: set GITHUB_TOKEN"},
		{forge.Options{Token: "t", Repository: ""}, `GITHUB_REPOSITORY "" is not of the form owner/repo`},
		{forge.Options{Token: "t", Repository: "octo"}, `GITHUB_REPOSITORY "octo" is not of the form owner/repo`},
		{forge.Options{Token: "t", Repository: "o/r/x"}, "is not of the form owner/repo"},
		{forge.Options{Token: "t", Repository: "o/r", APIURL: "ftp://x"}, "is not an http(s) URL"},
	}
	for _, tc := range cases {
		_, err := forge.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if c, err := forge.New(forge.Options{Token: "t", Repository: "octo/widgets.go"}); err != nil || c.Repository() != "octo/widgets.go" {
		t.Errorf("valid options: %v", err)
	}
}

func TestApprovalRequestValidated(t *testing.T) {
	_, c, _ := setup(t)
	bad := []func(*forge.ApprovalRequest){
		func(r *forge.ApprovalRequest) { r.ScheduleID = "../main" },
		func(r *forge.ApprovalRequest) { r.ScheduleID = "a..b" },
		func(r *forge.ApprovalRequest) { r.ScheduleID = "x.lock" },
		func(r *forge.ApprovalRequest) { r.Title = " " },
		func(r *forge.ApprovalRequest) { r.Body = strings.Repeat("x", 65537) },
		func(r *forge.ApprovalRequest) { r.Path = "/etc/x" },
		func(r *forge.ApprovalRequest) { r.Path = "a/../../b" },
		func(r *forge.ApprovalRequest) { r.Token = nil },
		func(r *forge.ApprovalRequest) { r.Labels = []string{strings.Repeat("l", 51)} },
	}
	for i, mod := range bad {
		req := approval("ok")
		mod(&req)
		if _, _, err := c.EnsureApprovalPR(context.Background(), req); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

func TestDefaultSleepHonoursContext(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: repoName})
	c, err := forge.New(forge.Options{Token: srv.BotToken, Repository: repoName, APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv.FailNext("GET", "/repos/octo/widgets", 403, map[string]string{"Retry-After": "50"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = c.EnsureApprovalPR(ctx, approval("s"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}
