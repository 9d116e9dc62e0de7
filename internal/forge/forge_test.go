package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/forge/githubtest"
)

const (
	repoName   = "octo/widgets"
	aliceToken = "ghp_alice_0123456789abcdef"
	bobToken   = "ghp_bob_0123456789abcdef"
)

// sleeps records the waits the client asks for, without sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func setup(t *testing.T, mods ...func(*forge.Options)) (*githubtest.Server, *forge.Client, *sleeps) {
	t.Helper()
	srv := githubtest.New(t, githubtest.Config{Repository: repoName})
	srv.AddUser(aliceToken, "alice")
	srv.AddUser(bobToken, "bob")
	sl := &sleeps{}
	opts := forge.Options{Token: srv.BotToken, Repository: repoName, APIURL: srv.URL, Sleep: sl.sleep}
	for _, m := range mods {
		m(&opts)
	}
	c, err := forge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, sl
}

func tokenFor(id string) func(int) []byte {
	return func(pr int) []byte {
		b, _ := json.Marshal(map[string]any{"schedule_id": id, "approved_by": "", "pr": pr})
		return append(b, '\n')
	}
}

func approval(id string) forge.ApprovalRequest {
	return forge.ApprovalRequest{
		ScheduleID: id,
		Title:      "Approve " + id,
		Body:       "Runs `deploy` with payload `{\"env\":\"prod\"}` as actor `ci`.",
		Labels:     []string{"astra:approval", "tier-2"},
		Path:       "var/approvals/pending/" + id + ".token",
		Token:      tokenFor(id),
	}
}

// fileOnBranch reads a file from the bare repository with go-git, without
// going through the fake's API.
func fileOnBranch(t *testing.T, srv *githubtest.Server, branch, path string) (string, bool) {
	t.Helper()
	repo, err := git.PlainOpen(srv.RepoDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("branch %s: %v", branch, err)
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File(path)
	if err != nil {
		return "", false
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

func TestEnsureApprovalPROpensLabelledPRWithToken(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	req := approval("nightly-deploy")

	pr, created, err := c.EnsureApprovalPR(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !created || pr.Number != 1 || pr.State != "open" || pr.HeadRef != "astra/approve/nightly-deploy" || pr.BaseRef != "main" {
		t.Fatalf("pr = %+v, created %v", pr, created)
	}
	if !strings.HasSuffix(pr.URL, "/octo/widgets/pull/1") {
		t.Errorf("URL = %q", pr.URL)
	}
	if tip := srv.BranchSHA(t, pr.HeadRef); pr.HeadSHA != tip {
		t.Errorf("HeadSHA = %s, branch tip %s", pr.HeadSHA, tip)
	}
	got, _, err := srv.Client(aliceToken).PullRequests.Get(ctx, "octo", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTitle() != req.Title || got.GetBody() != req.Body || got.GetUser().GetLogin() != githubtest.BotLogin {
		t.Errorf("title/body/user = %q/%q/%q", got.GetTitle(), got.GetBody(), got.GetUser().GetLogin())
	}
	var labels []string
	for _, l := range got.Labels {
		labels = append(labels, l.GetName())
	}
	if strings.Join(labels, ",") != "astra:approval,tier-2" {
		t.Errorf("labels = %v", labels)
	}
	checkTokenOnBranch(t, srv, c, pr, req)
}

func TestEnsureApprovalPRSecondCallUpdatesWithoutDuplicate(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	req := approval("nightly")
	first, _, err := c.EnsureApprovalPR(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	puts := srv.CountRequests("PUT", "/repos/octo/widgets/contents/*/*/*/*")

	// Same request again: nothing to change, nothing written.
	srv.ResetRequests()
	again, created, err := c.EnsureApprovalPR(ctx, req)
	if err != nil || created || again.Number != first.Number {
		t.Fatalf("again = %+v created=%v err=%v", again, created, err)
	}
	for _, r := range srv.Requests() {
		if r.Method != "GET" {
			t.Errorf("unchanged request wrote: %s %s", r.Method, r.Path)
		}
	}

	// Changed title, body, labels and token: updated in place.
	req.Title, req.Body = "Approve nightly (payload changed)", "new body"
	req.Labels = append(req.Labels, "payload-changed")
	req.Token = func(pr int) []byte { return []byte(fmt.Sprintf("v2 for #%d\n", pr)) }
	upd, created, err := c.EnsureApprovalPR(ctx, req)
	if err != nil || created || upd.Number != first.Number {
		t.Fatalf("update = %+v created=%v err=%v", upd, created, err)
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/pulls"); n != 0 {
		t.Fatalf("second call opened %d more pull requests", n)
	}
	prs, _, _ := srv.Client(aliceToken).PullRequests.List(ctx, "octo", "widgets", &github.PullRequestListOptions{State: "all"})
	if len(prs) != 1 {
		t.Fatalf("%d pull requests exist", len(prs))
	}
	got, _, _ := srv.Client(aliceToken).PullRequests.Get(ctx, "octo", "widgets", first.Number)
	if got.GetTitle() != req.Title || got.GetBody() != "new body" || len(got.Labels) != 3 {
		t.Errorf("after update: %q %q %v", got.GetTitle(), got.GetBody(), got.Labels)
	}
	if s, _ := fileOnBranch(t, srv, "astra/approve/nightly", req.Path); s != "v2 for #1\n" {
		t.Errorf("token = %q", s)
	}
	if upd.HeadSHA != srv.BranchSHA(t, "astra/approve/nightly") {
		t.Error("HeadSHA is not the new token commit")
	}
	if puts != 2 {
		t.Errorf("first call made %d PUTs, want 2 (token with #0, then naming the PR)", puts)
	}
}

func TestHumanMergeApproves(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	req := approval("deploy")
	pr, _, err := c.EnsureApprovalPR(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// main moves on before the merge: a real merge commit is needed.
	srv.CommitFiles(t, "main", map[string][]byte{"var/schedules/ledger.txt": []byte("x")}, "ledger [skip ci]")

	mergeSHA := srv.Merge(t, pr.Number, aliceToken)

	got, err := c.PullRequest(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Merged || got.State != "closed" || got.MergedBy != "alice" || got.MergedAt.IsZero() || got.MergeCommitSHA != mergeSHA {
		t.Fatalf("after merge: %+v", got)
	}
	if got.ClosedBy != "" || got.CloseComment != "" {
		t.Errorf("merged PR has ClosedBy/CloseComment: %+v", got)
	}
	want := string(tokenFor("deploy")(pr.Number))
	if s, ok := fileOnBranch(t, srv, "main", req.Path); !ok || s != want {
		t.Fatalf("token on main = %q, %v; want %q", s, ok, want)
	}
	if data, err := c.FileAt(ctx, got.MergeCommitSHA, req.Path); err != nil || string(data) != want {
		t.Errorf("FileAt(merge commit) = %q, %v", data, err)
	}
	checkMergeWithGit(t, srv, req.Path, want, got.HeadSHA)

	reapprove(t, srv, c, req, pr.Number)
}

func TestHumanCloseRejects(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	pr, _, err := c.EnsureApprovalPR(ctx, approval("risky"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Comment(t, pr.Number, aliceToken, "Looks fine to me")
	srv.Comment(t, pr.Number, bobToken, "first thought")
	srv.Close(t, pr.Number, bobToken, "Too risky on a Friday.")
	srv.Comment(t, pr.Number, aliceToken, "ok")

	got, err := c.PullRequest(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.Merged || got.State != "closed" || got.ClosedBy != "bob" || got.ClosedAt.IsZero() || got.CloseComment != "Too risky on a Friday." {
		t.Fatalf("after close: %+v", got)
	}
	if got.MergeCommitSHA != "" || got.MergedBy != "" {
		t.Errorf("closed PR reports a merge: %+v", got)
	}

	// Rejected: a new approval for the same schedule opens a new PR on a
	// branch reset to main's tip (not on top of the rejected commits).
	pr2, created, err := c.EnsureApprovalPR(ctx, approval("risky"))
	if err != nil || !created || pr2.Number == pr.Number {
		t.Fatalf("new approval after rejection: %+v %v %v", pr2, created, err)
	}
	repo, _ := git.PlainOpen(srv.RepoDir())
	head, _ := repo.CommitObject(plumbing.NewHash(pr2.HeadSHA))
	rejected, _ := repo.CommitObject(plumbing.NewHash(got.HeadSHA))
	main, _ := repo.CommitObject(plumbing.NewHash(srv.BranchSHA(t, "main")))
	if ok, _ := rejected.IsAncestor(head); ok {
		t.Error("new approval branch builds on the rejected commits")
	}
	if ok, _ := main.IsAncestor(head); !ok {
		t.Error("new approval branch does not start at main")
	}
}

func TestClosedWithoutCommentAndReopened(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	pr, _, _ := c.EnsureApprovalPR(ctx, approval("x"))
	srv.Close(t, pr.Number, aliceToken, "")
	// Reopened by alice, closed by bob: the last closer counts.
	if _, _, err := srv.Client(aliceToken).PullRequests.Edit(ctx, "octo", "widgets", pr.Number, &github.PullRequest{State: github.String("open")}); err != nil {
		t.Fatal(err)
	}
	srv.Close(t, pr.Number, bobToken, "")
	got, err := c.PullRequest(ctx, pr.Number)
	if err != nil || got.ClosedBy != "bob" || got.CloseComment != "" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestClosePullRequestOnExpiry(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	pr, _, _ := c.EnsureApprovalPR(ctx, approval("expiring"))
	if err := c.ClosePullRequest(ctx, pr.Number, "Expired: not approved within 24h."); err != nil {
		t.Fatal(err)
	}
	got, err := c.PullRequest(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "closed" || got.ClosedBy != githubtest.BotLogin || got.CloseComment != "Expired: not approved within 24h." {
		t.Fatalf("after expiry: %+v", got)
	}
	// Again: already closed, nothing posted twice.
	if err := c.ClosePullRequest(ctx, pr.Number, "Expired: not approved within 24h."); err != nil {
		t.Fatal(err)
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); n != 1 {
		t.Errorf("%d comments posted", n)
	}

	// A PR merged just before expiry is not closed: ErrMerged.
	pr2, _, _ := c.EnsureApprovalPR(ctx, approval("approved-in-time"))
	srv.Merge(t, pr2.Number, aliceToken)
	err = c.ClosePullRequest(ctx, pr2.Number, "Expired")
	if !errors.Is(err, forge.ErrMerged) || !strings.Contains(err.Error(), "merged by alice") {
		t.Fatalf("close merged PR: %v", err)
	}
}

func TestIsApprover(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	srv.AddTeamMember("octo", "release-managers", "carol")
	srv.AddPendingTeamMember("octo", "release-managers", "dave")
	srv.AddTeam("octo", "empty")

	cases := []struct {
		login   string
		allowed []string
		want    bool
		err     string
	}{
		{"alice", []string{"alice"}, true, ""},
		{"Alice", []string{"@alice"}, true, ""},
		{"bob", []string{"alice"}, false, ""},
		{"bob", nil, false, ""},
		{"", []string{"alice"}, false, ""},
		{"carol", []string{"alice", "@octo/release-managers"}, true, ""},
		{"dave", []string{"@octo/release-managers"}, false, ""}, // pending invitation
		{"erin", []string{"@octo/release-managers", "@octo/empty"}, false, ""},
		{"erin", []string{"@octo/no-such-team"}, false, "team @octo/no-such-team not found, or the token cannot read it"},
		{"carol", []string{"@octo/no-such-team", "@octo/release-managers"}, true, ""},
		{"github-actions[bot]", []string{"@octo/release-managers"}, false, ""},
		{"alice", []string{"@octo/bad team"}, false, "neither a login nor @org/team-slug"},
	}
	for _, tc := range cases {
		got, err := c.IsApprover(ctx, tc.login, tc.allowed)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("IsApprover(%q, %v) = %v, %v; want %v, %q", tc.login, tc.allowed, got, err, tc.want, tc.err)
		}
	}
	// Logins are decided without API calls.
	srv.ResetRequests()
	if ok, _ := c.IsApprover(ctx, "alice", []string{"@octo/release-managers", "alice"}); !ok || len(srv.Requests()) != 0 {
		t.Errorf("login match made %d requests", len(srv.Requests()))
	}
}

func TestCommentIssueDedupe(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	number, url, err := c.CreateIssue(ctx, "astra: dead letter", "body", []string{"astra:dead-letter"})
	if err != nil || number != 1 || !strings.HasSuffix(url, "/octo/widgets/issues/1") {
		t.Fatalf("CreateIssue = %d %q %v", number, url, err)
	}
	// Push the marker comment past the first page of comments.
	for i := 0; i < 120; i++ {
		srv.Comment(t, 1, aliceToken, fmt.Sprintf("chatter %d", i))
	}
	if err := c.CommentIssue(ctx, 1, "Run failed 3 times.", "dead-letter:nightly@2026-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 120; i++ {
		srv.Comment(t, 1, aliceToken, fmt.Sprintf("more chatter %d", i))
	}
	if err := c.CommentIssue(ctx, 1, "Run failed 3 times.", "dead-letter:nightly@2026-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	if err := c.CommentIssue(ctx, 1, "Another slot failed.", "dead-letter:nightly@2026-01-02T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	comments, _, _ := srv.Client(aliceToken).Issues.ListComments(ctx, "octo", "widgets", 1, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 3, PerPage: 100}})
	var mine []string
	for _, cm := range comments {
		if cm.GetUser().GetLogin() == githubtest.BotLogin {
			mine = append(mine, cm.GetBody())
		}
	}
	if len(mine) != 1 || !strings.Contains(mine[0], "<!-- astra:dead-letter:nightly@2026-01-02T00:00:00Z -->") {
		t.Fatalf("bot comments on the last page: %q", mine)
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); n != 240+2 {
		t.Fatalf("%d comments posted, want 242", n)
	}
	// Without a key, every call comments.
	for i := 0; i < 2; i++ {
		if err := c.CommentIssue(ctx, 1, "plain", ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); n != 244 {
		t.Fatalf("%d comments posted, want 244", n)
	}
}

// A run id ("<key>#<attempt>") and a chained step's key ('>') are dedupe
// keys as good as any: each is posted once, and nothing in a key can end
// the hidden marker early or make it match another key's.
func TestCommentIssueDedupesAnyKey(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	if _, _, err := c.CreateIssue(ctx, "astra: results", "body", nil); err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"note@2026-11-22T09:00:00Z#1",
		"note@2026-11-22T09:00:00Z#2",
		"note@2026-11-22T09:00:00Z>after#1",
		"note@event:deploy:x y -->#1",
		"note@event:deploy:x%20y%20--%3E#1", // what the key above encodes to, as a literal
		"x@manual:" + strings.Repeat("k", 300) + "#1",
	}
	for round := 0; round < 2; round++ {
		for _, k := range keys {
			if err := c.CommentIssue(ctx, 1, "ran "+k, k); err != nil {
				t.Fatalf("CommentIssue(%q): %v", k, err)
			}
		}
	}
	if n := srv.CountRequests("POST", "/repos/octo/widgets/issues/1/comments"); n != len(keys) {
		t.Fatalf("%d comments posted for %d keys twice, want one each", n, len(keys))
	}
	comments, _, err := srv.Client(aliceToken).Issues.ListComments(ctx, "octo", "widgets", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range comments {
		body := cm.GetBody()
		start := strings.Index(body, "<!-- astra:")
		if start < 0 || strings.Count(body[start:], "-->") != 1 || !strings.HasSuffix(body, " -->") || len(body)-start > 230 {
			t.Errorf("marker not closed exactly once at the end, or too long: %q", body)
		}
	}
	if !strings.Contains(comments[0].GetBody(), "<!-- astra:note@2026-11-22T09:00:00Z#1 -->") {
		t.Errorf("a run id is written as it is: %q", comments[0].GetBody())
	}
}

func TestRepositoryDispatch(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	if err := c.RepositoryDispatch(ctx, "astra-run", json.RawMessage(`{"schedule":"nightly"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.RepositoryDispatch(ctx, "astra-run", nil); err != nil {
		t.Fatal(err)
	}
	d := srv.Dispatches()
	if len(d) != 2 || d[0].EventType != "astra-run" || string(d[0].Payload) != `{"schedule":"nightly"}` || string(d[1].Payload) != "{}" {
		t.Fatalf("dispatches = %+v", d)
	}
	if err := c.RepositoryDispatch(ctx, "x", json.RawMessage(`[1]`)); err == nil {
		t.Error("array payload accepted")
	}
	many := `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1}`
	if err := c.RepositoryDispatch(ctx, "x", json.RawMessage(many)); err == nil || !strings.Contains(err.Error(), "at most 10") {
		t.Errorf("11 keys: %v", err)
	}
}

func TestFileAtNotFound(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	srv.CommitFiles(t, "main", map[string][]byte{"var/approvals/pending/a.token": []byte("tok")}, "add")
	if data, err := c.FileAt(ctx, "main", "var/approvals/pending/a.token"); err != nil || string(data) != "tok" {
		t.Fatalf("FileAt = %q, %v", data, err)
	}
	_, err := c.FileAt(ctx, "main", "var/approvals/pending/b.token")
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), `var/approvals/pending/b.token not found at ref "main" in octo/widgets`) {
		t.Fatalf("missing file: %v", err)
	}
	_, err = c.FileAt(ctx, "no-such-branch", "README.md")
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "ref no-such-branch not found") {
		t.Fatalf("missing ref: %v", err)
	}
	if _, err := c.FileAt(ctx, "main", "var"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory: %v", err)
	}
	if _, err := c.FileAt(ctx, "main", "../etc/passwd"); err == nil {
		t.Fatal("path escaping the repository accepted")
	}
}

func TestPullRequestNotFound(t *testing.T) {
	_, c, _ := setup(t)
	_, err := c.PullRequest(context.Background(), 99)
	if !errors.Is(err, forge.ErrNotFound) || !strings.Contains(err.Error(), "pull request #99 not found in octo/widgets") {
		t.Fatalf("err = %v", err)
	}
}

// raceTransport opens the same pull request just before the client's own
// POST /pulls reaches the server, like a concurrent astra run would.
type raceTransport struct {
	srv  *githubtest.Server
	once sync.Once
}

func (r *raceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == "POST" && strings.HasSuffix(req.URL.Path, "/pulls") {
		r.once.Do(func() {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(strings.NewReader(string(body)))
			var np github.NewPullRequest
			_ = json.Unmarshal(body, &np)
			_, _, _ = r.srv.Client(r.srv.BotToken).PullRequests.Create(req.Context(), "octo", "widgets", &np)
		})
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestEnsureApprovalPRConvergesWhenAnotherRunOpenedIt(t *testing.T) {
	srv := githubtest.New(t, githubtest.Config{Repository: repoName})
	c, err := forge.New(forge.Options{Token: srv.BotToken, Repository: repoName, APIURL: srv.URL,
		HTTPClient: &http.Client{Transport: &raceTransport{srv: srv}}})
	if err != nil {
		t.Fatal(err)
	}
	pr, created, err := c.EnsureApprovalPR(context.Background(), approval("raced"))
	if err != nil || created || pr.Number != 1 {
		t.Fatalf("pr = %+v created=%v err=%v", pr, created, err)
	}
	want := string(tokenFor("raced")(1))
	if s, _ := fileOnBranch(t, srv, "astra/approve/raced", "var/approvals/pending/raced.token"); s != want {
		t.Errorf("token = %q, want %q", s, want)
	}
	prs, _, _ := srv.Client(srv.BotToken).PullRequests.List(context.Background(), "octo", "widgets", nil)
	if len(prs) != 1 || len(prs[0].Labels) != 2 {
		t.Errorf("open PRs = %d, labels %v", len(prs), prs[0].Labels)
	}
}

func TestEnsureApprovalPRRefusesTokenAlreadyOnBase(t *testing.T) {
	srv, c, _ := setup(t)
	req := approval("same")
	req.Token = func(int) []byte { return []byte("constant\n") }
	srv.CommitFiles(t, "main", map[string][]byte{req.Path: []byte("constant\n")}, "token already there")
	_, _, err := c.EnsureApprovalPR(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "already holds this token") {
		t.Fatalf("err = %v", err)
	}
}

// checkMergeWithGit: the real git agrees (when installed): the merge
// commit has the approval head as second parent and the token on main.
func checkMergeWithGit(t *testing.T, srv *githubtest.Server, path, want, head string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "-C", srv.RepoDir(), "show", "main:"+path).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("git show main:%s = %q, %v", path, out, err)
		}
		out, err = exec.Command("git", "-C", srv.RepoDir(), "rev-parse", "main^2").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != head {
			t.Errorf("main^2 = %q, want head %s (%v)", out, head, err)
		}
	}
}

// reapprove: a new approval for the same schedule later; the token file
// already exists on main (until astra consumes it), the leftover branch is
// reset.
func reapprove(t *testing.T, srv *githubtest.Server, c *forge.Client, req forge.ApprovalRequest, first int) {
	t.Helper()
	ctx := context.Background()
	req.Token = func(pr int) []byte { return []byte(fmt.Sprintf("second approval #%d\n", pr)) }
	pr2, created, err := c.EnsureApprovalPR(ctx, req)
	if err != nil || !created || pr2.Number == first {
		t.Fatalf("re-approval: %+v created=%v err=%v", pr2, created, err)
	}
	if s, _ := fileOnBranch(t, srv, pr2.HeadRef, req.Path); s != fmt.Sprintf("second approval #%d\n", pr2.Number) {
		t.Errorf("re-approval token = %q", s)
	}
}

// checkTokenOnBranch: the committed token names its PR; the API and the
// bare repo agree, and main does not have it yet.
func checkTokenOnBranch(t *testing.T, srv *githubtest.Server, c *forge.Client, pr forge.PR, req forge.ApprovalRequest) {
	t.Helper()
	ctx := context.Background()
	want := string(req.Token(pr.Number))
	if s, ok := fileOnBranch(t, srv, pr.HeadRef, req.Path); !ok || s != want {
		t.Errorf("token on branch = %q, %v; want %q", s, ok, want)
	}
	data, err := c.FileAt(ctx, pr.HeadRef, req.Path)
	if err != nil || string(data) != want {
		t.Errorf("FileAt = %q, %v", data, err)
	}
	if _, ok := fileOnBranch(t, srv, "main", req.Path); ok {
		t.Error("token is on main before anyone merged")
	}
}

// A tracking issue with 10,000 comments: CommentIssueSince reads only the
// comments since the time it is given, so it posts once and finds its own
// comment again with a page each time; CommentIssue, which reads them all,
// stops at its page bound.
func TestCommentIssueSinceOnALongIssue(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	if _, _, err := c.CreateIssue(ctx, "astra: notifications", "body", nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	srv.AddComments(t, 1, githubtest.BotLogin, 10_000, func(i int) time.Time { return now.Add(time.Duration(i-10_000) * 5 * time.Minute) })
	since := now.Add(-15 * time.Minute)
	const list = "/repos/octo/widgets/issues/1/comments"
	srv.ResetRequests()
	for range 2 {
		if err := c.CommentIssueSince(ctx, 1, "ran nightly", "nightly@2026-11-30T00:00:00Z#1", since); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.CountRequests("POST", list); n != 1 {
		t.Fatalf("%d comments posted, want 1", n)
	}
	if n := srv.CountRequests("GET", list); n != 2 {
		t.Fatalf("%d pages read for two checks, want 2", n)
	}
	for _, r := range srv.Requests() {
		if r.Method == "GET" && !strings.Contains(r.Query, "since=") {
			t.Errorf("listed without since: %s?%s", r.Path, r.Query)
		}
	}
	// Reading every comment gives up at the page bound.
	err := c.CommentIssue(ctx, 1, "again", "nightly@2026-11-30T00:00:00Z#1")
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("reading 10,000 comments: %v", err)
	}
}
