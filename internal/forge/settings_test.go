package forge_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

const adaToken = "ghp_ada_0123456789abcdef"

// admin is a client with a repository administrator's token, as a person
// running astra doctor with `gh auth token` has.
func admin(t *testing.T, srv *githubtest.Server) *forge.Client {
	t.Helper()
	srv.AddUser(adaToken, "ada")
	srv.SetAdmin("ada", true)
	c, err := forge.New(forge.Options{Token: adaToken, Repository: repoName, APIURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBranchRulesMergesRulesets(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	rules, err := c.BranchRules(ctx, "main")
	if err != nil || len(rules.Types) != 0 || rules.PullRequest != nil {
		t.Fatalf("no rulesets: %+v, %v", rules, err)
	}
	srv.AddRuleset(githubtest.Ruleset{Include: []string{"~DEFAULT_BRANCH"}, Rules: []githubtest.Rule{{Type: "deletion"},
		{Type: "pull_request", PullRequest: &github.PullRequestRuleParameters{RequiredApprovingReviewCount: 2}}}})
	srv.AddRuleset(githubtest.Ruleset{Include: []string{"~ALL"}, Exclude: []string{"refs/heads/dev"}, Rules: []githubtest.Rule{{Type: "deletion"},
		{Type: "pull_request", PullRequest: &github.PullRequestRuleParameters{RequiredApprovingReviewCount: 1, RequireCodeOwnerReview: true}}}})
	srv.AddRuleset(githubtest.Ruleset{Enforcement: "evaluate", Include: []string{"~ALL"}, Rules: []githubtest.Rule{{Type: "non_fast_forward"}}})
	rules, err = c.BranchRules(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	want := forge.PullRequestRule{RequiredApprovingReviewCount: 2, RequireCodeOwnerReview: true}
	if !slices.Equal(rules.Types, []string{"deletion", "pull_request"}) || rules.PullRequest == nil || *rules.PullRequest != want || len(rules.Rulesets) != 2 {
		t.Fatalf("rules = %+v (%+v)", rules, rules.PullRequest)
	}
	if rules, err := c.BranchRules(ctx, "dev"); err != nil || len(rules.Types) != 0 {
		t.Fatalf("excluded branch: %+v, %v", rules, err)
	}
}

// Every settings read classifies its errors where they arise: an outage is
// infrastructure, a token that may not read is ErrNoAccess, and neither is
// the other.
func TestSettingsErrorsClassified(t *testing.T) {
	srv, c, _ := setup(t, func(o *forge.Options) { o.MaxRetries = -1 })
	ctx := context.Background()
	srv.FailNext("GET", "/repos/octo/widgets/rules/branches/*", http.StatusBadGateway, nil)
	if _, err := c.BranchRules(ctx, "main"); !errors.Is(err, errkind.ErrInfra) || errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("502: %v", err)
	}
	srv.FailNext("GET", "/repos/octo/widgets/rules/branches/*", http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800"})
	if _, err := c.BranchRules(ctx, "main"); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("rate limit: %v", err)
	}
	srv.FailNextWith(githubtest.Fault{Method: "GET", Path: "/repos/octo/widgets/rules/branches/*", Status: http.StatusForbidden,
		Message: "Upgrade to GitHub Pro or make this repository public to enable this feature."})
	_, err := c.BranchRules(ctx, "main")
	if !errors.Is(err, forge.ErrNoAccess) || errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("403: %v", err)
	}
	t.Log(err)

	// A workflow's token reads no secret, protection or workflow defaults.
	if _, err := c.RepoSecretExists(ctx, "ASTRA_LEDGER_KEY"); !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("secret: %v", err)
	}
	if _, err := c.BranchProtection(ctx, "main"); !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("protection: %v", err)
	}
	if _, err := c.DefaultWorkflowPermissions(ctx); !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("workflow permissions: %v", err)
	}
	if _, err := c.Environment(ctx, "astra"); !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("environment without actions: read: %v", err)
	}
	srv.SetActionsRead(githubtest.BotLogin, true)
	if _, err := c.Environment(ctx, "astra"); !errors.Is(err, forge.ErrNotFound) || errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("missing environment: %v", err)
	}
}

func TestSettingsAsAdministrator(t *testing.T) {
	srv, _, _ := setup(t)
	c := admin(t, srv)
	ctx := context.Background()

	if ok, err := c.RepoSecretExists(ctx, "ASTRA_LEDGER_KEY"); ok || err != nil {
		t.Fatalf("no secret: %v, %v", ok, err)
	}
	srv.SetSecret("ASTRA_LEDGER_KEY")
	if ok, err := c.RepoSecretExists(ctx, "ASTRA_LEDGER_KEY"); !ok || err != nil {
		t.Fatalf("secret: %v, %v", ok, err)
	}

	if p, err := c.BranchProtection(ctx, "main"); p != nil || err != nil {
		t.Fatalf("unprotected: %+v, %v", p, err)
	}
	srv.SetBranchProtection("main", &githubtest.BranchProtection{AllowDeletions: true,
		RequiredReviews: &github.PullRequestReviewsEnforcement{RequireCodeOwnerReviews: true, DismissStaleReviews: true, RequiredApprovingReviewCount: 1}})
	p, err := c.BranchProtection(ctx, "main")
	if err != nil || p == nil || !p.AllowDeletions || p.AllowForcePushes || p.RequiredReviews == nil || !p.RequiredReviews.RequireCodeOwnerReview {
		t.Fatalf("protection: %+v, %v", p, err)
	}

	if w, err := c.DefaultWorkflowPermissions(ctx); err != nil || w.Default != "read" || w.CanApprovePullRequestReviews {
		t.Fatalf("workflow permissions: %+v, %v", w, err)
	}
}

func TestEnvironmentsAsAdministrator(t *testing.T) {
	srv, _, _ := setup(t)
	c := admin(t, srv)
	ctx := context.Background()
	for _, e := range []githubtest.Environment{
		{Name: "open"},
		{Name: "guarded", Branches: "protected"},
		{Name: "astra", Branches: "custom", Policies: []githubtest.DeploymentPolicy{{Name: "main"}, {Name: "v*", Type: "tag"}}},
	} {
		srv.SetEnvironment(e)
	}
	for name, want := range map[string]forge.Environment{
		"open":    {Name: "open", AnyBranch: true},
		"guarded": {Name: "guarded", ProtectedBranches: true},
		"astra":   {Name: "astra", Policies: []forge.DeploymentPolicy{{Name: "main", Type: "branch"}, {Name: "v*", Type: "tag"}}},
	} {
		got, err := c.Environment(ctx, name)
		if err != nil || got.Name != want.Name || got.AnyBranch != want.AnyBranch || got.ProtectedBranches != want.ProtectedBranches || !slices.Equal(got.Policies, want.Policies) {
			t.Errorf("%s = %+v, %v; want %+v", name, got, err, want)
		}
	}
}

// The files of a pull request come from the real repository: the diff from
// the merge base to the head, still the same after the merge.
func TestPullRequestFiles(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	main := srv.BranchSHA(t, "main")
	gh := srv.Client(srv.BotToken)
	if _, _, err := gh.Git.CreateRef(ctx, "octo", "widgets", &github.Reference{Ref: github.String("refs/heads/f"), Object: &github.GitObject{SHA: github.String(main)}}); err != nil {
		t.Fatal(err)
	}
	srv.CommitFiles(t, "main", map[string][]byte{"docs/a.md": []byte("a\n")}, "base moves on")
	head := srv.CommitFiles(t, "f", map[string][]byte{"var/approvals/pending/x.token": []byte("token\n"), "README.md": nil}, "token")
	pr, _, err := gh.PullRequests.Create(ctx, "octo", "widgets", &github.NewPullRequest{Title: github.String("t"), Head: github.String("f"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	want := []forge.PRFile{{Path: "README.md", Status: "removed"}, {Path: "var/approvals/pending/x.token", Status: "added"}}
	check := func(when string) {
		t.Helper()
		files, err := c.PullRequestFiles(ctx, pr.GetNumber())
		if err != nil {
			t.Fatal(err)
		}
		for i := range files {
			if files[i].Status == "added" && files[i].SHA == "" {
				t.Errorf("%s: added file without its blob: %+v", when, files[i])
			}
			files[i].SHA = ""
		}
		if !slices.Equal(files, want) {
			t.Fatalf("%s: files = %+v", when, files)
		}
	}
	check("open")
	srv.AddUser(aliceToken, "alice")
	srv.Merge(t, pr.GetNumber(), aliceToken)
	check("merged")
	got, err := c.PullRequest(ctx, pr.GetNumber())
	if err != nil || got.HeadSHA != head {
		t.Fatalf("head = %s, %v; want %s", got.HeadSHA, err, head)
	}
	if _, err := c.PullRequestFiles(ctx, 99); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("missing PR: %v", err)
	}
}

// GitHub's time is the Date of its answer, an error's too; no answer is
// an outage.
func TestServerTime(t *testing.T) {
	srv, c, _ := setup(t)
	srv.SkewDate(-365 * 24 * time.Hour)
	got, err := c.ServerTime(context.Background())
	if err != nil || (time.Until(got)+365*24*time.Hour).Abs() > time.Minute {
		t.Fatalf("a year behind: %v %v", got, err)
	}
	srv.FailNext("GET", "/repos/"+repoName, 404, nil)
	if got2, err := c.ServerTime(context.Background()); err != nil || got2.Sub(got).Abs() > time.Minute {
		t.Fatalf("a 404's Date: %v %v", got2, err)
	}
	_, down, _ := setup(t, func(o *forge.Options) { o.APIURL = "http://127.0.0.1:1"; o.MaxRetries = -1 })
	if _, err := down.ServerTime(context.Background()); !errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("no answer: %v", err)
	}
}
