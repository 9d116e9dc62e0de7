package identity

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
	"github.com/astra-gitops/astra/internal/model"
)

func policies() *model.Policies {
	return &model.Policies{
		Roles: map[string][]string{
			"founder": {"octocat", "@octo/founders"},
			"ops":     {"Alice"},
			"cfo":     {"carol"},
		},
		Permissions: map[string][]string{
			model.VerbApprove:         {"founder"},
			model.VerbDeadLetterRetry: {"ops", "founder"},
			model.VerbRun:             {"ops", "founder"},
			model.VerbTrigger:         {"ops"},
			model.VerbInitForce:       {},
		},
	}
}

func TestRolesFor(t *testing.T) {
	p := policies()
	for _, c := range []struct {
		verb, taskRole string
		want           []string
	}{
		{model.VerbApprove, "", []string{"founder"}},
		{model.VerbApprove, "cfo", []string{"cfo"}},        // the task policy's role replaces the default
		{model.VerbReject, "", []string{"founder"}},        // no entry: approve's roles
		{model.VerbReject, "cfo", []string{"cfo"}},         // ... for that schedule
		{model.VerbRollback, "cfo", []string{"cfo"}},       // ... for that schedule
		{model.VerbRun, "cfo", []string{"ops", "founder"}}, // its own entry wins
		{model.VerbInitForce, "", []string{}},              // [] is nobody
		{model.VerbMemoryPurge, "", []string{"founder"}},
	} {
		if got := p.RolesFor(c.verb, c.taskRole); !slices.Equal(got, c.want) {
			t.Errorf("RolesFor(%s, %q) = %v, want %v", c.verb, c.taskRole, got, c.want)
		}
	}
	if got := (&model.Policies{}).RolesFor(model.VerbResume, ""); len(got) != 0 {
		t.Errorf("approve without roles defaults to nobody, got %v", got)
	}
}

// teamsFake answers from a fixed membership list, or fails.
type teamsFake struct {
	members map[string][]string // "org/team" -> logins
	err     error
	calls   int
}

func (f *teamsFake) IsTeamMember(_ context.Context, org, team, login string) (bool, error) {
	f.calls++
	if f.err != nil {
		return false, f.err
	}
	return slices.Contains(f.members[org+"/"+team], login), nil
}

// TestAuthorizeEveryVerb: each verb with someone allowed, someone who is
// not, and an unknown identity.
func TestAuthorizeEveryVerb(t *testing.T) {
	p := policies()
	teams := &teamsFake{members: map[string][]string{"octo/founders": {"dana"}}}
	ctx := context.Background()
	gh := func(login string) Identity {
		return Identity{Login: login, Source: SourceGitHubActions, Verified: true}
	}
	allowed := map[string]string{ // verb -> someone allowed
		model.VerbApprove: "octocat", model.VerbReject: "dana", model.VerbResume: "octocat",
		model.VerbDeadLetterRetry: "alice", model.VerbMemoryPurge: "dana", model.VerbRun: "alice",
		model.VerbTrigger: "ALICE", model.VerbRollback: "octocat",
	}
	for _, verb := range model.Verbs {
		t.Run(verb, func(t *testing.T) {
			if who, ok := allowed[verb]; ok {
				d := Authorize(ctx, p, verb, gh(who), teams, "")
				if !d.Allowed || d.Role == "" || !strings.Contains(d.Reason, " is in role "+d.Role) {
					t.Errorf("%s may %s: %+v", who, verb, d)
				}
			}
			d := Authorize(ctx, p, verb, gh("mallory"), teams, "")
			refused := strings.HasPrefix(d.Reason, "mallory (GitHub Actions) is not in role ") || verb == model.VerbInitForce
			if d.Allowed || d.Err != nil || !refused {
				t.Errorf("mallory may not %s: %+v", verb, d)
			}
			if d := Authorize(ctx, p, verb, Identity{Source: SourceGitConfig, Email: "eve@example.com"}, teams, ""); d.Allowed || !strings.Contains(d.Reason, "unknown identity") {
				t.Errorf("unknown identity may not %s: %+v", verb, d)
			}
		})
	}
	if d := Authorize(ctx, p, model.VerbInitForce, gh("octocat"), teams, ""); d.Allowed || !strings.HasPrefix(d.Reason, "nobody may init_force") {
		t.Errorf("permissions entry [] allows nobody: %+v", d)
	}
	d := Authorize(ctx, p, model.VerbTrigger, gh("mallory"), teams, "")
	if d.Reason != "mallory (GitHub Actions) is not in role ops (Alice)" {
		t.Errorf("reason = %q", d.Reason)
	}
	d = Authorize(ctx, p, model.VerbRun, gh("mallory"), teams, "")
	if d.Reason != "mallory (GitHub Actions) is not in role ops (Alice) or founder (octocat, @octo/founders)" {
		t.Errorf("reason = %q", d.Reason)
	}
}

func TestAuthorizeTaskRoleAndClaims(t *testing.T) {
	p := policies()
	ctx := context.Background()
	carol := Identity{Login: "carol", Source: SourceGitConfig, Email: "c@example.com", Verified: true}
	if d := Authorize(ctx, p, model.VerbApprove, carol, nil, "cfo"); !d.Allowed || d.Role != "cfo" {
		t.Errorf("the task policy's approver role allows carol: %+v", d)
	}
	if d := Authorize(ctx, p, model.VerbApprove, Identity{Login: "octocat", Source: SourceGitHubActions}, nil, "cfo"); d.Allowed {
		t.Errorf("the task policy's role replaces approve's: %+v", d)
	}
	if d := Authorize(ctx, &model.Policies{}, model.VerbApprove, carol, nil, ""); d.Allowed || !strings.HasPrefix(d.Reason, "nobody may approve") {
		t.Errorf("no approver anywhere: %+v", d)
	}
	claim := Identity{Login: "alice", Source: SourceClaim}
	if d := Authorize(ctx, p, model.VerbRun, claim, nil, ""); !d.Allowed || !strings.Contains(d.Reason, "unverified") {
		t.Errorf("an unverified claim is decided and says so: %+v", d)
	}
	jwtCaller := Identity{Login: "repo:octo/x:ref:refs/heads/main", Source: SourceJWT, Verified: true, Actor: "ci_caller"}
	if d := Authorize(ctx, p, model.VerbTrigger, jwtCaller, nil, ""); !d.Allowed {
		t.Errorf("a JWT caller may trigger: %+v", d)
	}
	if d := Authorize(ctx, p, model.VerbRun, jwtCaller, nil, ""); d.Allowed || !strings.Contains(d.Reason, "may only trigger") {
		t.Errorf("a JWT caller may not run: %+v", d)
	}
}

func TestAuthorizeTeams(t *testing.T) {
	p := policies()
	ctx := context.Background()
	dana := Identity{Login: "dana", Source: SourceGitHubActions, Verified: true}

	// Logins are decided without asking for teams.
	f := &teamsFake{}
	if d := Authorize(ctx, p, model.VerbApprove, Identity{Login: "OctoCat", Source: SourceGitHubActions}, f, ""); !d.Allowed || f.calls != 0 {
		t.Errorf("login match: %+v after %d team calls", d, f.calls)
	}
	// A team that cannot be read refuses (it fails closed), saying why.
	f = &teamsFake{err: errors.New("team @octo/founders not found, or the token cannot read it")}
	d := Authorize(ctx, p, model.VerbApprove, dana, f, "")
	if d.Allowed || d.Undecided() || !strings.Contains(d.Reason, "cannot read it") {
		t.Errorf("unreadable team: %+v", d)
	}
	d = Authorize(ctx, p, model.VerbApprove, dana, nil, "")
	if d.Allowed || d.Undecided() || !strings.Contains(d.Reason, "team @octo/founders cannot be checked without GitHub") {
		t.Errorf("no GitHub: %+v", d)
	}
	// A team GitHub could not answer for decides nothing.
	f = &teamsFake{err: errkind.Infraf("cannot reach GitHub")}
	if d := Authorize(ctx, p, model.VerbApprove, dana, f, ""); d.Allowed || !d.Undecided() || !errors.Is(d.Err, errkind.ErrInfra) {
		t.Errorf("outage: %+v", d)
	}
}

// TestAuthorizeTeamsThroughGitHub asks the GitHub API (a fake over a real
// repository).
func TestAuthorizeTeamsThroughGitHub(t *testing.T) {
	p := policies()
	ctx := context.Background()
	dana := Identity{Login: "dana", Source: SourceGitHubActions, Verified: true}
	srv := githubtest.New(t, githubtest.Config{Repository: "octo/widgets"})
	srv.AddTeamMember("octo", "founders", "dana")
	srv.AddPendingTeamMember("octo", "founders", "erin")
	c, err := forge.New(forge.Options{Token: srv.BotToken, Repository: "octo/widgets", APIURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	teams := ForgeTeams(c)
	if d := Authorize(ctx, p, model.VerbApprove, dana, teams, ""); !d.Allowed || d.Reason != "dana (GitHub Actions) is in role founder (team @octo/founders)" {
		t.Errorf("team member: %+v", d)
	}
	erin := Identity{Login: "erin", Source: SourceGitHubActions, Verified: true}
	if d := Authorize(ctx, p, model.VerbApprove, erin, teams, ""); d.Allowed || d.Undecided() {
		t.Errorf("pending invitation: %+v", d)
	}
	p.Roles["founder"] = []string{"@octo/missing"}
	if d := Authorize(ctx, p, model.VerbApprove, dana, teams, ""); d.Allowed || d.Undecided() || !strings.Contains(d.Reason, "@octo/missing not found") {
		t.Errorf("missing team: %+v", d)
	}
}

// TestAuthorizeTeamOutage: a team membership lookup that fails for
// GitHub's reasons (5xx, a timeout) is no decision, never "not an
// approver"; one that fails for the setup's (a missing team, a token that
// may not read it) is a refusal. Through a real HTTP server each time.
func TestAuthorizeTeamOutage(t *testing.T) {
	p := policies()
	p.Roles["founder"] = []string{"@octo/founders"}
	dana := Identity{Login: "dana", Source: SourcePullRequest, Verified: true}
	for _, c := range []struct {
		name      string
		fault     func(*githubtest.Server)
		undecided bool
		reason    string
	}{
		{"teams API answers 503", func(s *githubtest.Server) {
			s.FailNext("GET", "/orgs/octo/teams/founders/memberships/dana", http.StatusServiceUnavailable, nil)
		}, true, "503"},
		{"teams API answers 502", func(s *githubtest.Server) {
			s.FailNext("GET", "/orgs/octo/teams/founders/memberships/dana", http.StatusBadGateway, nil)
		}, true, "502"},
		{"team read after a 404 answers 500", func(s *githubtest.Server) {
			s.FailNext("GET", "/orgs/octo/teams/founders", http.StatusInternalServerError, nil)
		}, true, "500"},
		{"token may not read teams", func(s *githubtest.Server) {
			s.FailNext("GET", "/orgs/octo/teams/founders/memberships/dana", http.StatusForbidden, nil)
		}, false, "cannot read organization team membership"},
		{"no such team", func(*githubtest.Server) {}, false, "@octo/founders not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := githubtest.New(t, githubtest.Config{Repository: "octo/widgets"})
			if c.name != "no such team" {
				srv.AddTeamMember("octo", "founders", "erin") // the team exists; dana is not in it
			}
			c.fault(srv)
			fc, err := forge.New(forge.Options{Token: srv.BotToken, Repository: "octo/widgets", APIURL: srv.URL, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			d := Authorize(context.Background(), p, model.VerbApprove, dana, ForgeTeams(fc), "")
			if d.Allowed || d.Undecided() != c.undecided {
				t.Fatalf("decision %+v: undecided %v, want %v", d, d.Undecided(), c.undecided)
			}
			if c.undecided && (!errors.Is(d.Err, errkind.ErrInfra) || !strings.Contains(d.Err.Error(), c.reason)) {
				t.Errorf("outage %v: not infrastructure, or does not say %q", d.Err, c.reason)
			}
			if !c.undecided && !strings.Contains(d.Reason, c.reason) {
				t.Errorf("refusal %q does not say %q", d.Reason, c.reason)
			}
		})
	}

	// A teams API that does not answer in time (a hanging server).
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	fc, err := forge.New(forge.Options{Token: "a-test-token-of-some-length", Repository: "octo/widgets", APIURL: hang.URL,
		MaxRetries: -1, HTTPClient: &http.Client{Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if d := Authorize(context.Background(), p, model.VerbApprove, dana, ForgeTeams(fc), ""); d.Allowed || !errors.Is(d.Err, errkind.ErrInfra) {
		t.Errorf("timeout: %+v", d)
	}
}
