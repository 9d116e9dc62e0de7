package forge_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

// TestErrorKinds: what GitHub's failures mean to astra. An outage (5xx
// after retries, a timeout, nothing listening, a rate limit not waited
// out) is errkind.ErrInfra, to be retried; GitHub's answers about the
// request (401, 403, 404) carry no kind of their own, so no caller can
// mistake them for an outage; a bad setup is errkind.ErrUsage. Every case
// is a real HTTP exchange.
func TestErrorKinds(t *testing.T) {
	ctx := context.Background()
	closedPort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hanging.Close()

	for _, c := range []struct {
		name     string
		apiURL   string                     // a server of its own; "" is the fake GitHub
		fault    func(s *githubtest.Server) // queued on the fake GitHub
		mod      func(o *forge.Options)
		infra    bool
		notFound bool
	}{
		{name: "503 after every retry", fault: func(s *githubtest.Server) {
			for range 3 {
				s.FailNext("GET", "/repos/octo/widgets/pulls/1", http.StatusServiceUnavailable, nil)
			}
		}, mod: func(o *forge.Options) { o.MaxRetries = 2 }, infra: true},
		{name: "502 without retries", fault: func(s *githubtest.Server) {
			s.FailNext("GET", "/repos/octo/widgets/pulls/1", http.StatusBadGateway, nil)
		}, infra: true},
		{name: "rate limit longer than astra waits", fault: func(s *githubtest.Server) {
			s.FailNext("GET", "/repos/octo/widgets/pulls/1", http.StatusTooManyRequests, map[string]string{"Retry-After": "3600"})
		}, infra: true},
		{name: "timeout", apiURL: hanging.URL, mod: func(o *forge.Options) { o.HTTPClient = &http.Client{Timeout: 200 * time.Millisecond} }, infra: true},
		{name: "nothing listens", apiURL: closedPort, infra: true},
		{name: "404", fault: func(*githubtest.Server) {}, notFound: true},
		{name: "403", fault: func(s *githubtest.Server) {
			s.FailNext("GET", "/repos/octo/widgets/pulls/1", http.StatusForbidden, nil)
		}},
		{name: "401", mod: func(o *forge.Options) { o.Token = "ghp_revoked_token_123456" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := githubtest.New(t, githubtest.Config{Repository: repoName})
			opts := forge.Options{Token: srv.BotToken, Repository: repoName, APIURL: srv.URL, MaxRetries: -1,
				Sleep: func(context.Context, time.Duration) error { return nil }}
			if c.apiURL != "" {
				opts.APIURL = c.apiURL
			}
			if c.mod != nil {
				c.mod(&opts)
			}
			fc, err := forge.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			number := 1
			if c.fault != nil {
				pr, _, err := fc.EnsureApprovalPR(ctx, approval("s1"))
				if err != nil {
					t.Fatal(err)
				}
				number = pr.Number
				if c.name == "404" {
					number = 99
				}
				c.fault(srv)
			}
			_, err = fc.PullRequest(ctx, number)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, errkind.ErrInfra); got != c.infra {
				t.Errorf("%v: infrastructure %v, want %v", err, got, c.infra)
			}
			if errors.Is(err, errkind.ErrRefused) || errors.Is(err, errkind.ErrUsage) {
				t.Errorf("%v: kind %v; GitHub's answers are no refusal of anyone", err, errkind.Of(err))
			}
			if got := errors.Is(err, forge.ErrNotFound); got != c.notFound {
				t.Errorf("%v: ErrNotFound %v, want %v", err, got, c.notFound)
			}
		})
	}

	// A setup that cannot work is the user's to fix.
	if _, err := forge.New(forge.Options{Repository: repoName}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("empty token: %v", err)
	}
	if _, err := forge.New(forge.Options{Token: "a-token-of-some-length", Repository: "not a repository"}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("bad repository: %v", err)
	}
	_, fc, _ := setup(t)
	if _, err := fc.IsApprover(ctx, "alice", []string{"@octo/bad team"}); !errors.Is(err, errkind.ErrUsage) {
		t.Errorf("bad approver entry: %v", err)
	}
}

// TestIsApproverOutage: a team GitHub cannot answer for is an outage, not
// "not an approver"; a team that does not exist is an answer.
func TestIsApproverOutage(t *testing.T) {
	srv, fc, _ := setup(t, func(o *forge.Options) { o.MaxRetries = -1 })
	srv.AddTeamMember("octo", "release-managers", "carol")
	ctx := context.Background()
	srv.FailNext("GET", "/orgs/octo/teams/release-managers/memberships/carol", http.StatusServiceUnavailable, nil)
	if ok, err := fc.IsApprover(ctx, "carol", []string{"@octo/release-managers"}); ok || !errors.Is(err, errkind.ErrInfra) {
		t.Errorf("503: %v, %v; want an outage", ok, err)
	}
	if ok, err := fc.IsApprover(ctx, "carol", []string{"@octo/release-managers"}); !ok || err != nil {
		t.Errorf("once GitHub answers: %v, %v", ok, err)
	}
	if ok, err := fc.IsApprover(ctx, "erin", []string{"@octo/no-such-team"}); ok || err == nil || errors.Is(err, errkind.ErrInfra) {
		t.Errorf("missing team: %v, %v; want an answer that fails closed", ok, err)
	}
}
