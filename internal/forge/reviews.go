package forge

import (
	"context"
	"time"

	"github.com/google/go-github/v60/github"
)

// Review is one review of a pull request.
type Review struct {
	ID          int64
	User        string // login of the reviewer
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED or PENDING, as GitHub spells it
	CommitID    string // the head the review was made on
	SubmittedAt time.Time
}

// PullRequestReviews lists the reviews of pull request number in the order
// they were made (GET /repos/{o}/{r}/pulls/{n}/reviews, every page;
// pull-requests: read).
func (c *Client) PullRequestReviews(ctx context.Context, number int) ([]Review, error) {
	reviews, err := listAll(func(o github.ListOptions) ([]*github.PullRequestReview, *github.Response, error) {
		return c.gh.PullRequests.ListReviews(ctx, c.owner, c.repo, number, &o)
	})
	if err != nil {
		return nil, c.fail(err, "read reviews of pull request #%d", number)
	}
	out := make([]Review, 0, len(reviews))
	for _, r := range reviews {
		out = append(out, Review{ID: r.GetID(), User: r.GetUser().GetLogin(), State: r.GetState(),
			CommitID: r.GetCommitID(), SubmittedAt: r.GetSubmittedAt().Time})
	}
	return out, nil
}
