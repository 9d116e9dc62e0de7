package githubtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge"
)

// TestConformsToOpenAPI drives every operation the fake serves with
// astra's client (internal/forge) and go-github, the way astra and the
// people approving its pull requests use GitHub, including the error
// answers, and checks every request and answer on the wire against
// GitHub's description (see openapi_test.go).
func TestConformsToOpenAPI(t *testing.T) {
	spec := loadSpec(t)
	srv := New(t, Config{Repository: "octo/widgets", Files: map[string]string{
		"README.md":        "# widgets\n",
		"docs/guide.md":    "guide\n",
		"schedules/a.yaml": "id: a\n",
	}})
	wire := &wireLog{}
	hc := &http.Client{Transport: wire}
	client := func(token string) *github.Client {
		c := github.NewClient(hc).WithAuthToken(token)
		c.BaseURL, _ = url.Parse(srv.URL + "/")
		return c
	}
	fc, err := forge.New(forge.Options{Token: srv.BotToken, Repository: srv.Repository(), APIURL: srv.URL, HTTPClient: hc, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddUser("alice-token", "alice")
	srv.AddUser("rita-token", "rita")
	srv.SetWrite("rita", false)
	driveAll(t, srv, fc, client, wire)

	covered := map[string][]int{}
	for _, ex := range wire.exchanges() {
		op, problems := spec.check(ex)
		covered[op] = append(covered[op], ex.status)
		for _, p := range problems {
			t.Errorf("%s %s?%s (%s) → %d: %s", ex.method, ex.path, ex.query, op, ex.status, p)
		}
	}
	for _, op := range Operations() {
		ok := false
		for _, st := range covered[op] {
			ok = ok || st/100 == 2
		}
		if !ok {
			t.Errorf("%s was not exercised with a successful answer", op)
		}
		sort.Ints(covered[op])
		t.Logf("%-60s %v", op, covered[op])
	}
}

// driveAll makes the calls; it fails only when the fake does not behave
// as the scenario expects, and leaves shape checks to the caller.
func driveAll(t *testing.T, srv *Server, fc *forge.Client, client func(string) *github.Client, wire *wireLog) {
	ctx := context.Background()
	const o, r = "octo", "widgets"
	bot, alice, rita := client(srv.BotToken), client("alice-token"), client("rita-token")
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wantStatus := func(what string, err error, status int) {
		t.Helper()
		var er *github.ErrorResponse
		var abuse *github.AbuseRateLimitError
		var rate *github.RateLimitError
		got := 0
		switch {
		case errors.As(err, &er):
			got = er.Response.StatusCode
		case errors.As(err, &abuse):
			got = abuse.Response.StatusCode
		case errors.As(err, &rate):
			got = rate.Response.StatusCode
		}
		if got != status {
			t.Fatalf("%s: %v, want status %d", what, err, status)
		}
	}
	approval := func(id, title string, labels ...string) forge.ApprovalRequest {
		return forge.ApprovalRequest{
			ScheduleID: id, Title: title, Body: "Approve " + id, Labels: labels,
			Path:  "var/approvals/pending/" + id + ".token",
			Token: func(pr int) []byte { return fmt.Appendf(nil, "%s #%d\n", id, pr) },
		}
	}

	// astra opens an approval pull request, then updates it.
	pr1, created, err := fc.EnsureApprovalPR(ctx, approval("nightly", "Approve nightly", "astra:approval", "tier-2"))
	must("open approval", err)
	if !created {
		t.Fatal("approval PR not created")
	}
	_, _, err = fc.EnsureApprovalPR(ctx, approval("nightly", "Approve nightly (again)", "astra:approval", "tier-3"))
	must("update approval", err)

	// A run that could not push over git keeps its events on a branch
	// made through the git data API; a retry after a lost answer finds it.
	spill := map[string][]byte{"events.ndjson": []byte("{}\n"), "events.ndjson.sig": []byte("sig")}
	sha, err := fc.CreateBranchWithFiles(ctx, "astra/spill/r1-1", spill, "astra: 1 event")
	must("spill through the API", err)
	again, err := fc.CreateBranchWithFiles(ctx, "astra/spill/r1-1", spill, "astra: 1 event")
	must("spill through the API again", err)
	if again != sha {
		t.Fatalf("the same spill made commit %s, then %s", sha, again)
	}
	if _, err := fc.CreateBranchWithFiles(ctx, "astra/spill/r1-1", map[string][]byte{"events.ndjson": []byte("other\n")}, "astra: 1 event"); err == nil {
		t.Fatal("a spill of the same name with other events was accepted")
	}
	_, _, err = bot.Git.CreateTree(ctx, o, r, "", []*github.TreeEntry{{Path: github.String("a.txt"), Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String(strings.Repeat("0", 40))}})
	wantStatus("tree of a missing blob", err, http.StatusUnprocessableEntity)

	// Reading files, comments, issues, dispatches, approvers.
	_, err = fc.FileAt(ctx, "main", "README.md")
	must("read file", err)
	if _, err := fc.FileAt(ctx, "main", "missing.txt"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	must("comment", fc.CommentIssue(ctx, pr1.Number, "Waiting for approval.", "wait-1"))
	must("comment again", fc.CommentIssue(ctx, pr1.Number, "Waiting for approval.", "wait-1"))
	_, _, err = fc.CreateIssue(ctx, "nightly failed", "It failed.", []string{"astra:failure"})
	must("create issue", err)
	must("dispatch", fc.RepositoryDispatch(ctx, "astra-run", json.RawMessage(`{"schedule":"nightly"}`)))
	must("dispatch without payload", fc.RepositoryDispatch(ctx, "astra-run", nil))
	srv.AddTeamMember(o, "ops", "alice")
	srv.AddPendingTeamMember(o, "ops", "bob")
	for _, login := range []string{"alice", "bob", "carol"} {
		_, err := fc.IsApprover(ctx, login, []string{"@octo/ops"})
		must("approver "+login, err)
	}
	if _, err := fc.IsApprover(ctx, "carol", []string{"@octo/nobody"}); err == nil {
		t.Fatal("missing team: no error")
	}

	// astra asks the approvers for their review: a login and a team; a
	// stranger is refused.
	if err := fc.RequestReviewers(ctx, pr1.Number, []string{"alice", "@octo/ops", "@elsewhere/team"}); err == nil || !strings.Contains(err.Error(), "@elsewhere/team") {
		t.Fatalf("a team of another organisation: %v", err)
	}
	if users, teams := srv.RequestedReviewers(pr1.Number); !slices.Equal(users, []string{"alice"}) || !slices.Equal(teams, []string{"ops"}) {
		t.Fatalf("requested reviewers %v, teams %v", users, teams)
	}
	_, err = fc.PullRequest(ctx, pr1.Number) // its requested reviewers and teams, as GitHub lists them
	must("read pull request", err)
	wantStatus("request review of a stranger", fc.RequestReviewers(ctx, pr1.Number, []string{"nobody-here"}), 422)

	// People review: an approval, a reader's comment, a request for
	// changes an administrator dismisses; the author approves nothing.
	_, _, err = alice.PullRequests.CreateReview(ctx, o, r, pr1.Number, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
	must("approve", err)
	comment, _, err := rita.PullRequests.CreateReview(ctx, o, r, pr1.Number, &github.PullRequestReviewRequest{Event: github.String("COMMENT"), Body: github.String("Looks fine to me.")})
	must("a reader's review", err)
	_, _, err = alice.PullRequests.CreateReview(ctx, o, r, pr1.Number, &github.PullRequestReviewRequest{Event: github.String("REQUEST_CHANGES")})
	wantStatus("request changes without a body", err, http.StatusUnprocessableEntity)
	changes, _, err := alice.PullRequests.CreateReview(ctx, o, r, pr1.Number, &github.PullRequestReviewRequest{
		Event: github.String("REQUEST_CHANGES"), Body: github.String("Not this week."), CommitID: github.String(pr1.HeadSHA)})
	must("request changes", err)
	_, _, err = bot.PullRequests.CreateReview(ctx, o, r, pr1.Number, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
	wantStatus("the author approves", err, http.StatusUnprocessableEntity)
	_, _, err = bot.PullRequests.DismissReview(ctx, o, r, pr1.Number, changes.GetID(), &github.PullRequestReviewDismissalRequest{Message: github.String("Changed my mind.")})
	must("dismiss", err)
	_, _, err = bot.PullRequests.DismissReview(ctx, o, r, pr1.Number, comment.GetID(), &github.PullRequestReviewDismissalRequest{Message: github.String("No.")})
	wantStatus("dismiss a comment", err, http.StatusUnprocessableEntity)
	_, _, err = bot.PullRequests.DismissReview(ctx, o, r, pr1.Number, 999999, &github.PullRequestReviewDismissalRequest{Message: github.String("No.")})
	wantStatus("dismiss a missing review", err, http.StatusNotFound)
	_, resp, err := bot.PullRequests.ListReviews(ctx, o, r, pr1.Number, &github.ListOptions{PerPage: 1})
	must("list reviews", err)
	if resp.NextPage == 0 {
		t.Fatal("list reviews: no next page")
	}
	reviews, err := fc.PullRequestReviews(ctx, pr1.Number)
	must("read reviews", err)
	var states []string
	for _, rv := range reviews {
		states = append(states, rv.User+" "+rv.State)
	}
	if want := []string{"alice APPROVED", "rita COMMENTED", "alice DISMISSED"}; !slices.Equal(states, want) {
		t.Fatalf("reviews %v, want %v", states, want)
	}

	// A person approves by merging; astra reads the outcome.
	_, _, err = alice.PullRequests.Merge(ctx, o, r, pr1.Number, "", nil)
	must("merge", err)
	_, _, err = alice.PullRequests.Merge(ctx, o, r, pr1.Number, "", nil)
	wantStatus("merge again", err, http.StatusMethodNotAllowed)
	got, err := fc.PullRequest(ctx, pr1.Number)
	must("read merged PR", err)
	if !got.Merged || got.MergedBy != "alice" {
		t.Fatalf("merged PR = %+v", got)
	}

	// A person rejects by closing with a comment, reopens, closes again.
	pr2, _, err := fc.EnsureApprovalPR(ctx, approval("weekly", "Approve weekly", "astra:approval"))
	must("open approval 2", err)
	_, _, err = alice.Issues.CreateComment(ctx, o, r, pr2.Number, &github.IssueComment{Body: github.String("Not now.")})
	must("rejection comment", err)
	for _, state := range []string{"closed", "open", "closed"} {
		_, _, err = alice.PullRequests.Edit(ctx, o, r, pr2.Number, &github.PullRequest{State: github.String(state)})
		must("edit state "+state, err)
	}
	got, err = fc.PullRequest(ctx, pr2.Number)
	must("read closed PR", err)
	if got.ClosedBy != "alice" || got.CloseComment != "Not now." {
		t.Fatalf("closed PR = %+v", got)
	}

	// An approval expires: astra comments and closes.
	pr3, _, err := fc.EnsureApprovalPR(ctx, approval("monthly", "Approve monthly"))
	must("open approval 3", err)
	must("expire", fc.ClosePullRequest(ctx, pr3.Number, "Expired."))

	// Pull requests made with go-github: conflicts, stale merges, squash.
	main := srv.BranchSHA(t, "main")
	for _, b := range []string{"conflict", "feature"} {
		_, _, err = bot.Git.CreateRef(ctx, o, r, &github.Reference{Ref: github.String("refs/heads/" + b), Object: &github.GitObject{SHA: github.String(main)}})
		must("create ref "+b, err)
	}
	_, _, err = bot.Git.CreateRef(ctx, o, r, &github.Reference{Ref: github.String("refs/heads/feature"), Object: &github.GitObject{SHA: github.String(main)}})
	wantStatus("duplicate ref", err, http.StatusUnprocessableEntity)
	_, _, err = bot.PullRequests.Create(ctx, o, r, &github.NewPullRequest{Title: github.String("empty"), Head: github.String("feature"), Base: github.String("main")})
	wantStatus("PR without commits", err, http.StatusUnprocessableEntity)
	srv.CommitFiles(t, "conflict", map[string][]byte{"README.md": []byte("theirs\n")}, "theirs")
	srv.CommitFiles(t, "feature", map[string][]byte{"feature.txt": []byte("one\ntwo\n"), "docs/guide.md": nil}, "feature")
	srv.CommitFiles(t, "main", map[string][]byte{"README.md": []byte("ours\n")}, "ours")
	conflict, _, err := bot.PullRequests.Create(ctx, o, r, &github.NewPullRequest{Title: github.String("conflict"), Head: github.String("conflict"), Base: github.String("main")})
	must("create conflicting PR", err)
	_, _, err = alice.PullRequests.Merge(ctx, o, r, conflict.GetNumber(), "", nil)
	wantStatus("merge conflict", err, http.StatusMethodNotAllowed)
	feature, _, err := bot.PullRequests.Create(ctx, o, r, &github.NewPullRequest{Title: github.String("feature"), Head: github.String("octo:feature"), Base: github.String("main"), Body: github.String("Adds a feature.")})
	must("create PR", err)
	_, _, err = bot.PullRequests.Edit(ctx, o, r, feature.GetNumber(), &github.PullRequest{Body: github.String("Adds a feature, really.")})
	must("edit body", err)
	wire.sendInvalid(func() {
		_, _, err = bot.PullRequests.Edit(ctx, o, r, conflict.GetNumber(), &github.PullRequest{State: github.String("reopened")})
	})
	wantStatus("bad state", err, http.StatusUnprocessableEntity)
	_, _, err = alice.PullRequests.Merge(ctx, o, r, feature.GetNumber(), "", &github.PullRequestOptions{SHA: main})
	wantStatus("merge stale head", err, http.StatusConflict)
	_, _, err = alice.PullRequests.Merge(ctx, o, r, feature.GetNumber(), "Squashed.", &github.PullRequestOptions{MergeMethod: "squash", CommitTitle: "Feature"})
	must("squash merge", err)
	_, _, err = bot.PullRequests.Get(ctx, o, r, feature.GetNumber())
	must("get merged PR", err)
	_, _, err = bot.PullRequests.Get(ctx, o, r, 999)
	wantStatus("missing PR", err, http.StatusNotFound)

	// The files of pull requests, open and merged, as an approval check
	// reads them.
	files, err := fc.PullRequestFiles(ctx, feature.GetNumber())
	must("list merged PR files", err)
	if len(files) != 2 {
		t.Fatalf("merged PR files = %+v", files)
	}
	_, _, err = bot.PullRequests.ListFiles(ctx, o, r, conflict.GetNumber(), &github.ListOptions{PerPage: 1})
	must("list PR files", err)

	driveSettings(t, srv, fc, client, must, wantStatus)

	// Pagination: one item per page makes the Link header appear.
	_, resp, err = bot.PullRequests.List(ctx, o, r, &github.PullRequestListOptions{State: "all", Base: "main", ListOptions: github.ListOptions{PerPage: 1, Page: 2}})
	must("list PRs", err)
	if resp.NextPage == 0 {
		t.Fatal("list PRs: no next page")
	}
	_, _, err = bot.Issues.ListIssueEvents(ctx, o, r, pr2.Number, &github.ListOptions{PerPage: 1})
	must("list events", err)
	_, _, err = bot.Issues.ListComments(ctx, o, r, pr2.Number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 1}})
	must("list comments", err)

	// Refs and contents directly.
	_, _, err = bot.Git.GetRef(ctx, o, r, "refs/heads/nope")
	wantStatus("missing ref", err, http.StatusNotFound)
	_, _, err = bot.Git.UpdateRef(ctx, o, r, &github.Reference{Ref: github.String("refs/heads/conflict"), Object: &github.GitObject{SHA: github.String(main)}}, false)
	wantStatus("non-fast-forward", err, http.StatusUnprocessableEntity)
	_, _, err = bot.Git.UpdateRef(ctx, o, r, &github.Reference{Ref: github.String("refs/heads/conflict"), Object: &github.GitObject{SHA: github.String(main)}}, true)
	must("force update ref", err)
	for _, dir := range []string{"", "var/approvals/pending", "schedules"} {
		_, _, _, err = bot.Repositories.GetContents(ctx, o, r, dir, nil)
		must("list "+dir, err)
	}
	_, _, _, err = bot.Repositories.GetContents(ctx, o, r, "README.md", &github.RepositoryContentGetOptions{Ref: "nope"})
	wantStatus("missing ref", err, http.StatusNotFound)
	file := &github.RepositoryContentFileOptions{Message: github.String("add"), Content: []byte("x"), Branch: github.String("conflict"),
		Committer: &github.CommitAuthor{Name: github.String("Astra"), Email: github.String("astra@example.com")}}
	_, _, err = bot.Repositories.CreateFile(ctx, o, r, "x.txt", file)
	must("create file", err)
	_, _, err = bot.Repositories.CreateFile(ctx, o, r, "x.txt", file)
	wantStatus("update without sha", err, http.StatusUnprocessableEntity)
	file.SHA = github.String(strings.Repeat("0", 40))
	_, _, err = bot.Repositories.UpdateFile(ctx, o, r, "x.txt", file)
	wantStatus("update with stale sha", err, http.StatusConflict)
	file.Branch = github.String("nope")
	_, _, err = bot.Repositories.UpdateFile(ctx, o, r, "x.txt", file)
	wantStatus("update on a missing branch", err, http.StatusNotFound)

	// Invalid requests, permissions, credentials, faults.
	_, _, err = bot.Issues.Create(ctx, o, r, &github.IssueRequest{Title: github.String("")})
	wantStatus("issue without title", err, http.StatusUnprocessableEntity)
	_, _, err = bot.Issues.AddLabelsToIssue(ctx, o, r, pr2.Number, []string{strings.Repeat("l", 51)})
	wantStatus("label too long", err, http.StatusUnprocessableEntity)
	_, _, err = bot.Issues.CreateComment(ctx, o, r, pr2.Number, &github.IssueComment{Body: github.String("")})
	wantStatus("empty comment", err, http.StatusUnprocessableEntity)
	wire.sendInvalid(func() {
		_, _, err = bot.Repositories.Dispatch(ctx, o, r, github.DispatchRequestOptions{EventType: strings.Repeat("e", 101)})
	})
	wantStatus("long event type", err, http.StatusUnprocessableEntity)
	_, _, err = rita.Issues.Create(ctx, o, r, &github.IssueRequest{Title: github.String("t")})
	wantStatus("read-only user creates an issue", err, http.StatusForbidden)
	_, _, err = rita.Issues.CreateComment(ctx, o, r, pr2.Number, &github.IssueComment{Body: github.String("+1")})
	must("read-only user comments", err)
	_, _, err = client("bad-token").Repositories.Get(ctx, o, r)
	wantStatus("bad token", err, http.StatusUnauthorized)
	_, _, err = bot.Repositories.Get(ctx, o, "other")
	wantStatus("other repository", err, http.StatusNotFound)
	srv.FailNext("GET", "/repos/octo/widgets", http.StatusBadGateway, nil)
	_, _, err = client(srv.BotToken).Repositories.Get(ctx, o, r)
	wantStatus("fault", err, http.StatusBadGateway)
	srv.FailNext("", "/repos/octo/widgets/pulls", http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000000"})
	_, _, err = client(srv.BotToken).PullRequests.List(ctx, o, r, nil)
	wantStatus("primary rate limit", err, http.StatusForbidden)
	srv.FailNext("", "/repos/octo/widgets/issues", http.StatusTooManyRequests, map[string]string{"Retry-After": "30"})
	_, _, err = client(srv.BotToken).Issues.Create(ctx, o, r, &github.IssueRequest{Title: github.String("t")})
	wantStatus("secondary rate limit", err, http.StatusTooManyRequests)
}

// driveSettings reads the settings astra doctor checks, as the workflow's
// token (which may not read most of them) and as an administrator.
func driveSettings(t *testing.T, srv *Server, fc *forge.Client, client func(string) *github.Client,
	must func(string, error), wantStatus func(string, error, int)) {
	t.Helper()
	ctx := context.Background()
	const o, r = "octo", "widgets"
	srv.AddUser("ada-token", "ada")
	srv.SetAdmin("ada", true)
	bot, ada, rita := client(srv.BotToken), client("ada-token"), client("rita-token")

	srv.AddRuleset(Ruleset{Name: "main", Include: []string{"~DEFAULT_BRANCH"}, Rules: []Rule{{Type: "deletion"}, {Type: "non_fast_forward"},
		{Type: "pull_request", PullRequest: &github.PullRequestRuleParameters{RequireCodeOwnerReview: true, DismissStaleReviewsOnPush: true, RequiredApprovingReviewCount: 1}}}})
	srv.AddRuleset(Ruleset{Name: "state", Include: []string{"refs/heads/astra/*"}, Rules: []Rule{{Type: "deletion"}, {Type: "non_fast_forward"}}})
	srv.AddRuleset(Ruleset{Name: "trial", Enforcement: "evaluate", Include: []string{"~ALL"}, Rules: []Rule{{Type: "required_linear_history"}}})
	rules, err := fc.BranchRules(ctx, "main")
	must("rules of main", err)
	if !rules.Has("deletion") || rules.PullRequest == nil || !rules.PullRequest.RequireCodeOwnerReview || rules.Has("required_linear_history") {
		t.Fatalf("rules of main = %+v", rules)
	}
	rules, err = fc.BranchRules(ctx, "astra/state")
	must("rules of a branch with a slash", err)
	if !rules.Has("non_fast_forward") || rules.Has("pull_request") {
		t.Fatalf("rules of astra/state = %+v", rules)
	}
	_, _, err = bot.Repositories.GetRulesForBranch(ctx, o, r, "nowhere")
	must("rules of a branch without rules", err)
	if b, err := fc.DefaultBranch(ctx); err != nil || b != "main" {
		t.Fatalf("default branch = %q, %v", b, err)
	}

	srv.SetBranchProtection("main", &BranchProtection{RequiredReviews: &github.PullRequestReviewsEnforcement{RequireCodeOwnerReviews: true, RequiredApprovingReviewCount: 1}})
	_, _, err = ada.Repositories.GetBranchProtection(ctx, o, r, "main")
	must("classic protection", err)
	if _, _, err = ada.Repositories.GetBranchProtection(ctx, o, r, "feature"); !errors.Is(err, github.ErrBranchNotProtected) {
		t.Fatalf("unprotected branch: %v", err)
	}
	_, _, err = bot.Repositories.GetBranchProtection(ctx, o, r, "main")
	wantStatus("protection as the workflow's token", err, http.StatusForbidden)

	srv.SetEnvironment(Environment{Name: "astra", Branches: "custom", Policies: []DeploymentPolicy{{Name: "main"}, {Name: "v*", Type: "tag"}}})
	srv.SetEnvironment(Environment{Name: "open"})
	srv.SetEnvironment(Environment{Name: "guarded", Branches: "protected"})
	for _, name := range []string{"astra", "open", "guarded"} {
		_, _, err = ada.Repositories.GetEnvironment(ctx, o, r, name)
		must("environment "+name, err)
	}
	_, _, err = ada.Repositories.ListDeploymentBranchPolicies(ctx, o, r, "astra")
	must("deployment branch policies", err)
	_, _, err = ada.Repositories.GetEnvironment(ctx, o, r, "nowhere")
	wantStatus("missing environment", err, http.StatusNotFound)
	_, err = fc.Environment(ctx, "astra")
	if !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("environment without actions: read: %v", err)
	}
	srv.SetActionsRead(BotLogin, true)
	env, err := fc.Environment(ctx, "astra")
	must("environment with actions: read", err)
	if len(env.Policies) != 2 || env.AnyBranch {
		t.Fatalf("environment = %+v", env)
	}

	srv.SetSecret("ASTRA_LEDGER_KEY")
	_, _, err = ada.Actions.GetRepoSecret(ctx, o, r, "ASTRA_LEDGER_KEY")
	must("repository secret", err)
	_, _, err = ada.Actions.GetRepoSecret(ctx, o, r, "NOPE")
	wantStatus("missing secret", err, http.StatusNotFound)
	if _, err := fc.RepoSecretExists(ctx, "ASTRA_LEDGER_KEY"); !errors.Is(err, forge.ErrNoAccess) {
		t.Fatalf("secret as the workflow's token: %v", err)
	}
	_, _, err = rita.Actions.GetRepoSecret(ctx, o, r, "ASTRA_LEDGER_KEY")
	wantStatus("secret as a reader", err, http.StatusForbidden)

	srv.SetWorkflowPermissions("write", true)
	_, _, err = ada.Repositories.GetDefaultWorkflowPermissions(ctx, o, r)
	must("default workflow permissions", err)
	_, _, err = bot.Repositories.GetDefaultWorkflowPermissions(ctx, o, r)
	wantStatus("workflow permissions as the workflow's token", err, http.StatusForbidden)
}
