package githubtest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v60/github"
)

// Client returns a go-github client for this server authenticated with
// token: what a human (or another tool) would use.
func (s *Server) Client(token string) *github.Client {
	c := github.NewClient(nil).WithAuthToken(token)
	u, err := url.Parse(s.URL + "/")
	if err != nil {
		panic(err)
	}
	c.BaseURL = u
	return c
}

// Merge merges pull request number through the HTTP API as the user of
// token (PUT /repos/{o}/{r}/pulls/{n}/merge, merge method "merge") and
// returns the merge commit SHA. It fails the test when GitHub would refuse.
func (s *Server) Merge(t testing.TB, number int, token string) string {
	t.Helper()
	res, _, err := s.Client(token).PullRequests.Merge(context.Background(), s.owner, s.name, number, "", nil)
	if err != nil {
		t.Fatalf("githubtest: merge #%d: %v", number, err)
	}
	return res.GetSHA()
}

// Close rejects pull request number the way a person does in the UI with
// "Close with comment": the comment (if any) is posted first, then the pull
// request is closed (PATCH state=closed), both as the user of token.
func (s *Server) Close(t testing.TB, number int, token, comment string) {
	t.Helper()
	ctx := context.Background()
	c := s.Client(token)
	if comment != "" {
		if _, _, err := c.Issues.CreateComment(ctx, s.owner, s.name, number, &github.IssueComment{Body: github.String(comment)}); err != nil {
			t.Fatalf("githubtest: comment on #%d: %v", number, err)
		}
	}
	if _, _, err := c.PullRequests.Edit(ctx, s.owner, s.name, number, &github.PullRequest{State: github.String("closed")}); err != nil {
		t.Fatalf("githubtest: close #%d: %v", number, err)
	}
}

// Comment posts an issue or pull request comment as the user of token.
func (s *Server) Comment(t testing.TB, number int, token, body string) {
	t.Helper()
	if _, _, err := s.Client(token).Issues.CreateComment(context.Background(), s.owner, s.name, number, &github.IssueComment{Body: github.String(body)}); err != nil {
		t.Fatalf("githubtest: comment on #%d: %v", number, err)
	}
}

// Review submits a review of pull request number as the user of token
// (POST /repos/{o}/{r}/pulls/{n}/reviews) with event APPROVE,
// REQUEST_CHANGES or COMMENT, on commitID ("" is the pull request's head),
// and returns its id. It fails the test when GitHub would refuse.
func (s *Server) Review(t testing.TB, number int, token, event, body, commitID string) int64 {
	t.Helper()
	req := &github.PullRequestReviewRequest{Event: github.String(event)}
	if body != "" {
		req.Body = github.String(body)
	}
	if commitID != "" {
		req.CommitID = github.String(commitID)
	}
	r, _, err := s.Client(token).PullRequests.CreateReview(context.Background(), s.owner, s.name, number, req)
	if err != nil {
		t.Fatalf("githubtest: review #%d: %v", number, err)
	}
	return r.GetID()
}

// Dismiss dismisses review reviewID of pull request number as the user of
// token, with message.
func (s *Server) Dismiss(t testing.TB, number int, reviewID int64, token, message string) {
	t.Helper()
	_, _, err := s.Client(token).PullRequests.DismissReview(context.Background(), s.owner, s.name, number, reviewID,
		&github.PullRequestReviewDismissalRequest{Message: github.String(message)})
	if err != nil {
		t.Fatalf("githubtest: dismiss review %d of #%d: %v", reviewID, number, err)
	}
}

// CommitFiles commits changes directly on branch in the bare repository (as
// a git push would; content nil deletes a path) and returns the commit SHA.
// The branch is created from nothing if it does not exist.
func (s *Server) CommitFiles(t testing.TB, branch string, changes map[string][]byte, message string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.open()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	tip, err := branchTip(repo, branch)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	who := signature(s.owner, s.clock())
	h, err := commitFiles(repo, tip, changes, message, who, who)
	if err == nil {
		err = setBranch(repo, branch, h, tip)
	}
	if err != nil {
		t.Fatalf("githubtest: commit on %s: %v", branch, err)
	}
	return h.String()
}

// ReadFile reads path at ref (branch, tag or commit SHA) straight from the
// bare repository, bypassing the API. ok is false when it does not exist.
func (s *Server) ReadFile(t testing.TB, ref, path string) (data []byte, ok bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.open()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	h, found := resolveRef(repo, ref)
	if !found {
		return nil, false
	}
	fs, err := flatten(repo, h)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	e, found := fs[path]
	if !found {
		return nil, false
	}
	data, err = readBlob(repo, e.Hash)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	return data, true
}

// BranchSHA is the commit branch points at, "" when it does not exist.
func (s *Server) BranchSHA(t testing.TB, branch string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, err := s.open()
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	h, err := branchTip(repo, branch)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	if h == plumbing.ZeroHash {
		return ""
	}
	return h.String()
}

// AddComments adds n comments by login to issue number at once, the i-th
// made at at(i) (times in order), as a long-lived tracking issue would have
// them; much faster than n Comment calls.
func (s *Server) AddComments(t testing.TB, number int, login string, n int, at func(i int) time.Time) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[number]
	if is == nil {
		t.Fatalf("githubtest: no issue #%d", number)
	}
	for i := range n {
		is.comments = append(is.comments, &comment{id: s.newID(), body: fmt.Sprintf("comment %d", i), user: login, at: at(i).UTC().Truncate(time.Second)})
	}
}
