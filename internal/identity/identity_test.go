package identity

import (
	"errors"
	"strings"
	"testing"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func email(e string) func() (string, error) { return func() (string, error) { return e, nil } }

var identities = map[string]string{"Alice@Example.com": "alice"}

func TestResolve(t *testing.T) {
	ci := envOf(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_ACTOR": "alice"})
	rerun := envOf(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_ACTOR": "alice", "GITHUB_TRIGGERING_ACTOR": "bob"})
	local := envOf(nil)
	noEmail := func() (string, error) { return "", errors.New("no repository") }
	cases := []struct {
		name   string
		env    Env
		login  string
		source string
		ok     bool
		err    error
		msg    string
	}{
		{"ci actor", Env{Getenv: ci}, "alice", SourceGitHubActions, true, nil, ""},
		{"ci re-run by someone else", Env{Getenv: rerun}, "bob", SourceGitHubActions, true, nil, ""},
		{"ci --by same person", Env{Getenv: ci, By: "@Alice"}, "alice", SourceGitHubActions, true, nil, ""},
		{"ci --by someone else", Env{Getenv: ci, By: "mallory"}, "alice", SourceGitHubActions, true, ErrMismatch, "GitHub says alice is acting"},
		{"ci --by in a dry run too", Env{Getenv: ci, By: "mallory", Unverified: true}, "alice", SourceGitHubActions, true, ErrMismatch, "drop --by"},
		{"ci without actor", Env{Getenv: envOf(map[string]string{"GITHUB_ACTIONS": "true"})}, "", "", false, ErrUnknown, "GITHUB_ACTOR is not set"},
		{"local mapped", Env{Getenv: local, GitEmail: email("alice@example.COM"), Identities: identities}, "alice", SourceGitConfig, true, nil, ""},
		{"local --by same", Env{Getenv: local, GitEmail: email("alice@example.com"), Identities: identities, By: "alice"}, "alice", SourceGitConfig, true, nil, ""},
		{"local --by other", Env{Getenv: local, GitEmail: email("alice@example.com"), Identities: identities, By: "bob"}, "alice", SourceGitConfig, true, ErrMismatch, "git config user.email alice@example.com is alice"},
		{"local --by other in dry run", Env{Getenv: local, GitEmail: email("alice@example.com"), Identities: identities, By: "bob", Unverified: true}, "bob", SourceClaim, false, nil, ""},
		{"local --by same in dry run", Env{Getenv: local, GitEmail: email("alice@example.com"), Identities: identities, By: "alice", Unverified: true}, "alice", SourceGitConfig, true, nil, ""},
		{"local unmapped", Env{Getenv: local, GitEmail: email("eve@example.com"), Identities: identities}, "", SourceGitConfig, false, ErrUnknown, "add `identities: {eve@example.com: <your GitHub login>}`"},
		{"local unmapped --by", Env{Getenv: local, GitEmail: email("eve@example.com"), Identities: identities, By: "alice"}, "", SourceGitConfig, false, ErrUnknown, "is not mapped"},
		{"local unmapped --by in dry run", Env{Getenv: local, GitEmail: email("eve@example.com"), Identities: identities, By: "alice", Unverified: true}, "alice", SourceClaim, false, nil, ""},
		{"local no email", Env{Getenv: local, GitEmail: email(""), Identities: identities}, "", SourceGitConfig, false, ErrUnknown, "git config user.email is not set"},
		{"local unreadable config", Env{Getenv: local, GitEmail: noEmail, Identities: identities}, "", SourceGitConfig, false, ErrUnknown, "no repository"},
		{"local no email, --by with --no-push", Env{Getenv: local, GitEmail: email(""), By: "alice", Unverified: true}, "alice", SourceClaim, false, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := Resolve(c.env)
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.msg)) {
				t.Fatalf("err = %v, want %v containing %q", err, c.err, c.msg)
			}
			if id.Login != c.login || id.Source != c.source || id.Verified != c.ok {
				t.Errorf("identity = %+v, want %s from %s, verified %v", id, c.login, c.source, c.ok)
			}
		})
	}
}

func TestIdentityString(t *testing.T) {
	for id, want := range map[*Identity]string{
		{Login: "alice", Source: SourceGitHubActions}:                           "alice (GitHub Actions)",
		{Login: "alice", Source: SourceGitConfig, Email: "a@example.com"}:       "alice (git config a@example.com)",
		{Login: "bob", Source: SourceClaim}:                                     "bob (unverified --by)",
		{Login: "repo:o/r:ref:refs/heads/main", Source: SourceJWT, Actor: "ci"}: "repo:o/r:ref:refs/heads/main (JWT, as actor ci)",
		{Source: SourceGitConfig, Email: "eve@example.com"}:                     "unknown (git config eve@example.com)",
	} {
		if got := id.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if p := PullRequestIdentity("carol"); p.String() != "carol (pull request)" || !p.Verified {
		t.Errorf("PullRequestIdentity = %+v", p)
	}
}
