package forge

import (
	"context"
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v60/github"
)

// CreateBranchWithFiles makes branch (a new name) point at a new
// parentless commit holding files (slash paths to contents) with message,
// through GitHub's git data API: blobs, a tree, a commit, a ref. It is
// the second way out for work a run could not push over git (a spill):
// the API is another service than git's smart HTTP. Blobs and trees are
// content-addressed, so a retry after a lost answer makes the same
// objects; a retried commit (GitHub dates it) may be another one, left
// unreferenced, as the ref names the commit whose answer arrived. A branch
// that already exists at the same commit is success; at another, an error
// (the names are unique).
func (c *Client) CreateBranchWithFiles(ctx context.Context, branch string, files map[string][]byte, message string) (commit string, err error) {
	post := retryablePOST(ctx) // a repeated POST makes the same object, or an unreferenced one
	var entries []*github.TreeEntry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		b, _, err := c.gh.Git.CreateBlob(post, c.owner, c.repo, &github.Blob{
			Content: ptr(base64.StdEncoding.EncodeToString(files[p])), Encoding: ptr("base64"),
		})
		if err != nil {
			return "", c.fail(err, "storing %s for branch %s", p, branch)
		}
		entries = append(entries, &github.TreeEntry{Path: ptr(p), Mode: ptr("100644"), Type: ptr("blob"), SHA: b.SHA})
	}
	tree, _, err := c.gh.Git.CreateTree(post, c.owner, c.repo, "", entries)
	if err != nil {
		return "", c.fail(err, "storing the tree of branch %s", branch)
	}
	cm, _, err := c.gh.Git.CreateCommit(post, c.owner, c.repo, &github.Commit{Message: ptr(message), Tree: &github.Tree{SHA: tree.SHA}}, nil)
	if err != nil {
		return "", c.fail(err, "storing the commit of branch %s", branch)
	}
	sha := cm.GetSHA()
	ref := "refs/heads/" + branch
	_, _, err = c.gh.Git.CreateRef(post, c.owner, c.repo, &github.Reference{Ref: ptr(ref), Object: &github.GitObject{SHA: ptr(sha)}})
	if err == nil {
		return sha, nil
	}
	if !isStatus(err, http.StatusUnprocessableEntity) || !strings.Contains(ghMessages(err), "already exists") {
		return "", c.fail(err, "creating branch %s", branch)
	}
	have, _, gerr := c.gh.Git.GetRef(ctx, c.owner, c.repo, ref)
	if gerr != nil {
		return "", c.fail(gerr, "reading branch %s, which already exists", branch)
	}
	if have.GetObject().GetSHA() != sha {
		return "", c.failf("branch %s already exists at another commit (%.12s)", branch, have.GetObject().GetSHA())
	}
	return sha, nil // an earlier attempt's, whose answer was lost
}
