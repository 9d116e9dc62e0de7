package forge

import (
	"context"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
)

// PRFile is one file a pull request changes, from its merge base with the
// base branch to its head.
type PRFile struct {
	Path         string
	Status       string // added, removed, modified, renamed, copied, changed, unchanged
	PreviousPath string // for renamed (and copied) files
	SHA          string // the blob at the head; "" when removed
}

// maxPRFiles is how many files GitHub lists for a pull request at most.
const maxPRFiles = 3000

// PullRequestFiles lists the files pull request number changes (GET
// /repos/{o}/{r}/pulls/{n}/files, every page; pull-requests: read). GitHub
// lists at most 3000: a pull request that changes more cannot be told
// apart from one that changes exactly those, so that is an error.
func (c *Client) PullRequestFiles(ctx context.Context, number int) ([]PRFile, error) {
	files, err := listAll(func(o github.ListOptions) ([]*github.CommitFile, *github.Response, error) {
		return c.gh.PullRequests.ListFiles(ctx, c.owner, c.repo, number, &o)
	})
	if err != nil {
		return nil, c.classify(err, "list the files of pull request #%d", number)
	}
	if len(files) >= maxPRFiles {
		// Refused, not retried: asking again lists the same files.
		return nil, errkind.Refused(c.failf("list the files of pull request #%d: it changes %d files or more, and GitHub lists no more than that", number, maxPRFiles))
	}
	out := make([]PRFile, 0, len(files))
	for _, f := range files {
		p := PRFile{Path: f.GetFilename(), Status: f.GetStatus(), PreviousPath: f.GetPreviousFilename()}
		if p.Status != "removed" {
			p.SHA = f.GetSHA()
		}
		out = append(out, p)
	}
	return out, nil
}
