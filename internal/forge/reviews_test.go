package forge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
)

// Reviews come in the order they were made, over more than one page, with
// the head each was made on; a dismissed approval says so.
func TestPullRequestReviews(t *testing.T) {
	srv, c, _ := setup(t)
	ctx := context.Background()
	pr, _, err := c.EnsureApprovalPR(ctx, approval("deploy"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 101 // astra asks for 100 a page
	var ids []int64
	for i := range n {
		token, event := aliceToken, "APPROVE"
		if i%2 == 1 {
			token, event = bobToken, "COMMENT"
		}
		ids = append(ids, srv.Review(t, pr.Number, token, event, fmt.Sprintf("review %d", i), ""))
	}
	srv.Dismiss(t, pr.Number, ids[0], srv.BotToken, "Stale.")
	srv.ResetRequests()

	got, err := c.PullRequestReviews(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	if pages := srv.CountRequests("GET", "/repos/octo/widgets/pulls/*/reviews"); len(got) != n || pages != 2 {
		t.Fatalf("%d reviews in %d pages, want %d in 2", len(got), pages, n)
	}
	for i, r := range got {
		user, state := "alice", "APPROVED"
		switch {
		case i == 0:
			state = "DISMISSED"
		case i%2 == 1:
			user, state = "bob", "COMMENTED"
		}
		if r.ID != ids[i] || r.User != user || r.State != state || r.CommitID != pr.HeadSHA || r.SubmittedAt.IsZero() {
			t.Fatalf("review %d = %+v, want %d by %s %s on %s", i, r, ids[i], user, state, pr.HeadSHA)
		}
	}
}

// An outage is an outage, never "no reviews"; a missing pull request is
// not found.
func TestPullRequestReviewsErrors(t *testing.T) {
	srv, c, _ := setup(t, func(o *forge.Options) { o.MaxRetries = -1 })
	ctx := context.Background()
	pr, _, err := c.EnsureApprovalPR(ctx, approval("deploy"))
	if err != nil {
		t.Fatal(err)
	}
	srv.FailNext("GET", "/repos/octo/widgets/pulls/*/reviews", http.StatusBadGateway, nil)
	got, err := c.PullRequestReviews(ctx, pr.Number)
	if got != nil || !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), fmt.Sprintf("read reviews of pull request #%d", pr.Number)) {
		t.Fatalf("502: %v, %v; want an outage", got, err)
	}
	if got, err := c.PullRequestReviews(ctx, pr.Number); err != nil || len(got) != 0 {
		t.Fatalf("once GitHub answers: %v, %v", got, err)
	}
	if _, err := c.PullRequestReviews(ctx, 99); !errors.Is(err, forge.ErrNotFound) || errors.Is(err, errkind.ErrInfra) {
		t.Fatalf("missing PR: %v", err)
	}
}
