package githubtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge/githubtest"
	"github.com/astra-gitops/astra/internal/gittest"
)

var ctx = context.Background()

func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	return 0
}

func TestAuthentication(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	_, _, err := srv.Client("nope").Repositories.Get(ctx, "o", "r")
	if status(err) != http.StatusUnauthorized || !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("unknown token: %v", err)
	}
	repo, _, err := srv.Client(srv.BotToken).Repositories.Get(ctx, "o", "r")
	if err != nil || repo.GetDefaultBranch() != "main" || repo.GetFullName() != "o/r" {
		t.Fatalf("Get repo = %v, %v", repo, err)
	}
	if _, _, err := srv.Client(srv.BotToken).Repositories.Get(ctx, "o", "other"); status(err) != http.StatusNotFound {
		t.Fatalf("other repo: %v", err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.TokenHash, srv.BotToken) || r.TokenHash == srv.BotToken {
			t.Fatalf("token recorded in clear: %+v", r)
		}
	}
	if got := srv.Requests()[1]; got.Login != githubtest.BotLogin || got.TokenHash != githubtest.TokenHash(srv.BotToken) {
		t.Fatalf("recorded request = %+v", got)
	}
}

func TestContentsCommitsWithPrecondition(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	gh := srv.Client(srv.BotToken)
	opts := &github.RepositoryContentFileOptions{Message: github.String("add"), Content: []byte("v1"), Branch: github.String("main")}
	res, resp, err := gh.Repositories.CreateFile(ctx, "o", "r", "a/b.txt", opts)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	if srv.BranchSHA(t, "main") != res.Commit.GetSHA() {
		t.Fatal("main did not move to the new commit")
	}
	// Without sha on an existing file: 422; with a stale sha: 409.
	opts.Content = []byte("v2")
	if _, _, err := gh.Repositories.UpdateFile(ctx, "o", "r", "a/b.txt", opts); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("update without sha: %v", err)
	}
	opts.SHA = github.String(strings.Repeat("0", 40))
	if _, _, err := gh.Repositories.UpdateFile(ctx, "o", "r", "a/b.txt", opts); status(err) != http.StatusConflict {
		t.Fatalf("update with stale sha: %v", err)
	}
	opts.SHA = res.Content.SHA
	if _, resp, err := gh.Repositories.UpdateFile(ctx, "o", "r", "a/b.txt", opts); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %v", err)
	}
	fc, _, _, err := gh.Repositories.GetContents(ctx, "o", "r", "a/b.txt", &github.RepositoryContentGetOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := fc.GetContent(); got != "v2" {
		t.Fatalf("content = %q", got)
	}
	// At the first commit the file still holds v1.
	fc, _, _, err = gh.Repositories.GetContents(ctx, "o", "r", "a/b.txt", &github.RepositoryContentGetOptions{Ref: res.Commit.GetSHA()})
	if got, _ := fc.GetContent(); err != nil || got != "v1" {
		t.Fatalf("content at first commit = %q, %v", got, err)
	}
	_, dir, _, err := gh.Repositories.GetContents(ctx, "o", "r", "a", nil)
	if err != nil || len(dir) != 1 || dir[0].GetName() != "b.txt" {
		t.Fatalf("dir = %v, %v", dir, err)
	}
	if _, _, _, err := gh.Repositories.GetContents(ctx, "o", "r", "missing", nil); status(err) != http.StatusNotFound {
		t.Fatalf("missing: %v", err)
	}
	gitFsck(t, srv.RepoDir())
}

func TestPullRequestRealMerge(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	srv.AddUser("human-token", "alice")
	bot := srv.Client(srv.BotToken)
	head, base := openFeaturePR(t, srv, bot)

	mergeSHA := srv.Merge(t, 1, "human-token")

	checkMergeCommit(t, srv, mergeSHA, base, head)
	got, _, err := bot.PullRequests.Get(ctx, "o", "r", 1)
	if err != nil || !got.GetMerged() || got.GetMergedBy().GetLogin() != "alice" || got.GetState() != "closed" || got.GetMergeCommitSHA() != mergeSHA {
		t.Fatalf("after merge: %+v %v", got, err)
	}
	// Merging again is refused.
	if _, _, err := srv.Client("human-token").PullRequests.Merge(ctx, "o", "r", 1, "", nil); status(err) != http.StatusMethodNotAllowed {
		t.Fatalf("second merge: %v", err)
	}
	events, _, err := bot.Issues.ListIssueEvents(ctx, "o", "r", 1, nil)
	if err != nil || len(events) != 2 || events[0].GetEvent() != "merged" || events[1].GetActor().GetLogin() != "alice" {
		t.Fatalf("events = %v, %v", events, err)
	}
	gitFsck(t, srv.RepoDir())
}

func TestMergeConflictIsNotMergeable(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	bot := srv.Client(srv.BotToken)
	main := srv.BranchSHA(t, "main")
	if _, _, err := bot.Git.CreateRef(ctx, "o", "r", &github.Reference{Ref: github.String("refs/heads/b"), Object: &github.GitObject{SHA: github.String(main)}}); err != nil {
		t.Fatal(err)
	}
	srv.CommitFiles(t, "b", map[string][]byte{"README.md": []byte("theirs")}, "edit")
	srv.CommitFiles(t, "main", map[string][]byte{"README.md": []byte("ours")}, "edit")
	pr, _, err := bot.PullRequests.Create(ctx, "o", "r", &github.NewPullRequest{Title: github.String("T"), Head: github.String("b"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetMergeable() || pr.GetMergeableState() != "dirty" {
		t.Fatalf("mergeable = %v %s", pr.GetMergeable(), pr.GetMergeableState())
	}
	if _, _, err := bot.PullRequests.Merge(ctx, "o", "r", pr.GetNumber(), "", nil); status(err) != http.StatusMethodNotAllowed {
		t.Fatalf("merge conflict: %v", err)
	}
}

func TestCloseReadOnlyAndPagination(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	srv.AddUser("reader-token", "rita")
	srv.SetWrite("rita", false)
	bot := srv.Client(srv.BotToken)
	issue, _, err := bot.Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("t"), Labels: &[]string{"x"}})
	if err != nil || issue.GetNumber() != 1 || len(issue.Labels) != 1 {
		t.Fatalf("create issue: %v %v", issue, err)
	}
	// A read-only user may comment but not create issues.
	srv.Comment(t, 1, "reader-token", "hello")
	if _, _, err := srv.Client("reader-token").Issues.Create(ctx, "o", "r", &github.IssueRequest{Title: github.String("t")}); status(err) != http.StatusForbidden ||
		!strings.Contains(err.Error(), "Resource not accessible by integration") {
		t.Fatalf("read-only create: %v", err)
	}
	for i := 0; i < 34; i++ {
		srv.Comment(t, 1, srv.BotToken, "c")
	}
	first, resp, err := bot.Issues.ListComments(ctx, "o", "r", 1, nil)
	if err != nil || len(first) != 30 || resp.NextPage != 2 || resp.LastPage != 2 {
		t.Fatalf("page 1: %d comments, next %d, %v", len(first), resp.NextPage, err)
	}
	second, resp, err := bot.Issues.ListComments(ctx, "o", "r", 1, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 2}})
	if err != nil || len(second) != 5 || resp.NextPage != 0 {
		t.Fatalf("page 2: %d comments, next %d, %v", len(second), resp.NextPage, err)
	}
}

func TestFailNext(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	srv.FailNext("GET", "/repos/o/*", 503, nil)
	srv.FailNext("", "/repos/o/r", 403, map[string]string{"Retry-After": "7"})
	bot := srv.Client(srv.BotToken)
	if _, _, err := bot.Repositories.Get(ctx, "o", "r"); status(err) != http.StatusServiceUnavailable {
		t.Fatalf("first: %v", err)
	}
	_, _, err := bot.Repositories.Get(ctx, "o", "r")
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter().Seconds() != 7 {
		t.Fatalf("second: %#v", err)
	}
	if srv.PendingFaults() != 0 {
		t.Fatal("faults not consumed")
	}
	// go-github now refuses locally until Retry-After passed; a fresh client works.
	if _, _, err := srv.Client(srv.BotToken).Repositories.Get(ctx, "o", "r"); err != nil {
		t.Fatalf("third: %v", err)
	}
	if n := srv.CountRequests("GET", "/repos/o/r"); n != 3 {
		t.Fatalf("recorded %d requests", n)
	}
}

func TestTeamsAndDispatch(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	srv.AddTeamMember("o", "ops", "Alice")
	srv.AddPendingTeamMember("o", "ops", "bob")
	bot := srv.Client(srv.BotToken)
	m, _, err := bot.Teams.GetTeamMembershipBySlug(ctx, "o", "ops", "alice")
	if err != nil || m.GetState() != "active" {
		t.Fatalf("alice: %v %v", m, err)
	}
	if m, _, _ := bot.Teams.GetTeamMembershipBySlug(ctx, "o", "ops", "bob"); m.GetState() != "pending" {
		t.Fatalf("bob: %v", m)
	}
	if _, _, err := bot.Teams.GetTeamMembershipBySlug(ctx, "o", "ops", "carol"); status(err) != http.StatusNotFound {
		t.Fatalf("carol: %v", err)
	}
	if _, _, err := bot.Teams.GetTeamBySlug(ctx, "o", "nope"); status(err) != http.StatusNotFound {
		t.Fatalf("no team: %v", err)
	}
	if _, _, err := bot.Repositories.Dispatch(ctx, "o", "r", github.DispatchRequestOptions{EventType: "astra"}); err != nil {
		t.Fatal(err)
	}
	if d := srv.Dispatches(); len(d) != 1 || d[0].EventType != "astra" || string(d[0].Payload) != "{}" {
		t.Fatalf("dispatches = %+v", d)
	}
}

// gitFsck checks the objects go-git wrote with the real git, when present.
func gitFsck(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not installed; skipping fsck")
		return
	}
	if out, err := exec.Command("git", "-C", dir, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// TestCloneAndPushWithGit checks what astra's end-to-end tests rely on: the
// bare repository can be cloned over file://, and a push made with the real
// git is what the API serves next (the fake never caches repository state).
func TestCloneAndPushWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	work := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		gittest.Must(t, work, args...)
	}
	run("clone", "-q", "file://"+srv.RepoDir(), ".")
	// Enough objects that receive-pack keeps a pack file instead of
	// unpacking loose objects.
	for i := 0; i < 150; i++ {
		if err := os.WriteFile(filepath.Join(work, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("add", ".")
	run("commit", "-q", "-m", "many files")
	run("push", "-q", "origin", "HEAD:main")
	if packs, _ := filepath.Glob(filepath.Join(srv.RepoDir(), "objects", "pack", "*.pack")); len(packs) == 0 {
		t.Fatal("the push left no pack file; the test no longer covers reading pushed packs")
	}

	fc, _, _, err := srv.Client(srv.BotToken).Repositories.GetContents(ctx, "o", "r", "f149.txt", &github.RepositoryContentGetOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := fc.GetContent(); got != "149" {
		t.Fatalf("content = %q", got)
	}
	// And a commit made through the API on top of the pushed one is
	// fetched by git.
	res, _, err := srv.Client(srv.BotToken).Repositories.CreateFile(ctx, "o", "r", "api.txt",
		&github.RepositoryContentFileOptions{Message: github.String("api"), Content: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	run("pull", "-q", "--ff-only", "origin", "main")
	if data, err := os.ReadFile(filepath.Join(work, "api.txt")); err != nil || string(data) != "a" {
		t.Fatalf("api.txt after pull = %q, %v (commit %s)", data, err, res.GetSHA())
	}
	gitFsck(t, srv.RepoDir())
}

// checkMergeCommit: main is a true merge of base and head holding both
// sides' files.
func checkMergeCommit(t *testing.T, srv *githubtest.Server, mergeSHA, base, head string) {
	t.Helper()
	repo, err := git.PlainOpen(srv.RepoDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil || ref.Hash().String() != mergeSHA {
		t.Fatalf("main = %v, want merge %s (%v)", ref, mergeSHA, err)
	}
	mc, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if len(mc.ParentHashes) != 2 || mc.ParentHashes[0].String() != base || mc.ParentHashes[1].String() != head {
		t.Fatalf("merge parents = %v, want [%s %s]", mc.ParentHashes, base, head)
	}
	for _, p := range []string{"f.txt", "g.txt", "README.md"} {
		if _, ok := srv.ReadFile(t, "main", p); !ok {
			t.Errorf("%s missing on main after merge", p)
		}
	}
}

// openFeaturePR opens pull request 1 from feature/x while main moves on,
// checking GitHub's refusals on the way (a duplicate ref, a pull request
// without commits, a duplicate pull request).
func openFeaturePR(t *testing.T, srv *githubtest.Server, bot *github.Client) (head, base string) {
	t.Helper()
	main := srv.BranchSHA(t, "main")
	if _, _, err := bot.Git.CreateRef(ctx, "o", "r", &github.Reference{Ref: github.String("refs/heads/feature/x"), Object: &github.GitObject{SHA: github.String(main)}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bot.Git.CreateRef(ctx, "o", "r", &github.Reference{Ref: github.String("refs/heads/feature/x"), Object: &github.GitObject{SHA: github.String(main)}}); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("duplicate ref: %v", err)
	}
	// No commits yet: GitHub refuses the PR.
	newPR := &github.NewPullRequest{Title: github.String("T"), Head: github.String("o:feature/x"), Base: github.String("main"), Body: github.String("B")}
	if _, _, err := bot.PullRequests.Create(ctx, "o", "r", newPR); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("PR without commits: %v", err)
	}
	head = srv.CommitFiles(t, "feature/x", map[string][]byte{"f.txt": []byte("x")}, "add f")
	// main moves on meanwhile, so the merge is a true merge.
	base = srv.CommitFiles(t, "main", map[string][]byte{"g.txt": []byte("g")}, "add g")
	pr, _, err := bot.PullRequests.Create(ctx, "o", "r", newPR)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetNumber() != 1 || pr.GetHead().GetSHA() != head || !pr.GetMergeable() {
		t.Fatalf("pr = %+v", pr)
	}
	if _, _, err := bot.PullRequests.Create(ctx, "o", "r", newPR); status(err) != http.StatusUnprocessableEntity ||
		!strings.Contains(err.Error(), "A pull request already exists for o:feature/x") {
		t.Fatalf("duplicate PR: %v", err)
	}
	return head, base
}

// A review without an event stays pending, seen by its author only, one
// per author; a pending review is not dismissed, and its author may not
// approve their own pull request.
func TestPendingReviewAndOwnPullRequest(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: "o/r"})
	srv.AddUser("human-token", "alice")
	bot, alice := srv.Client(srv.BotToken), srv.Client("human-token")
	openFeaturePR(t, srv, bot)

	pending, _, err := alice.PullRequests.CreateReview(ctx, "o", "r", 1, &github.PullRequestReviewRequest{Body: github.String("draft")})
	if err != nil || pending.GetState() != "PENDING" || pending.SubmittedAt != nil {
		t.Fatalf("pending review = %+v, %v", pending, err)
	}
	if _, _, err := alice.PullRequests.CreateReview(ctx, "o", "r", 1, &github.PullRequestReviewRequest{}); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("a second pending review: %v", err)
	}
	for who, c := range map[string]*github.Client{"alice": alice, "bot": bot} {
		list, _, err := c.PullRequests.ListReviews(ctx, "o", "r", 1, nil)
		if want := map[string]int{"alice": 1, "bot": 0}[who]; err != nil || len(list) != want {
			t.Fatalf("%s lists %d reviews, want %d: %v", who, len(list), want, err)
		}
	}
	if _, _, err := bot.PullRequests.DismissReview(ctx, "o", "r", 1, pending.GetID(), &github.PullRequestReviewDismissalRequest{Message: github.String("x")}); status(err) != http.StatusNotFound {
		t.Fatalf("dismiss another's pending review: %v", err)
	}
	_, _, err = bot.PullRequests.CreateReview(ctx, "o", "r", 1, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
	if status(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "Can not approve your own pull request") {
		t.Fatalf("the author approves: %v", err)
	}
	if id := srv.Review(t, 1, srv.BotToken, "COMMENT", "Ready.", ""); id == 0 {
		t.Fatal("the author's comment has no id")
	}
}
