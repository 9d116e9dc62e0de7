package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"
)

// approvalBranchPrefix is the namespace of approval branches; astra owns it
// and resets a leftover branch there when it opens a new approval.
const approvalBranchPrefix = "astra/approve/"

// ApprovalBranch is the head branch of the approval pull request for a
// schedule.
func ApprovalBranch(scheduleID string) string { return approvalBranchPrefix + scheduleID }

// maxBody is GitHub's limit for issue, pull request and comment bodies.
const maxBody = 65536

// ApprovalRequest describes the approval pull request for one schedule.
// Branch: "astra/approve/<schedule_id>". One open PR per schedule.
type ApprovalRequest struct {
	ScheduleID string
	Base       string   // branch the approval merges into (default branch if empty: looked up)
	Title      string   // required
	Body       string   // Markdown, already redacted by the caller; at most 65536 characters
	Labels     []string // e.g. "astra:approval", "tier-2"; added, never removed
	Path       string   // "var/approvals/pending/<schedule_id>.token"
	// Token returns the token file content. It is called with 0 before the
	// PR exists and with the PR number after, so the committed token names
	// its PR.
	Token func(pr int) []byte
}

// PR is what astra needs to know about a pull request.
type PR struct {
	Number   int
	URL      string // html URL
	State    string // open|closed
	Merged   bool
	MergedBy string
	MergedAt time.Time
	ClosedBy string    // for closed-unmerged PRs: the actor of the last "closed" event
	ClosedAt time.Time // set for merged PRs too
	// CloseComment is, for closed-unmerged PRs, the last comment by the
	// closer, if any (the rejection reason), without astra's hidden markers.
	CloseComment   string
	HeadRef        string
	BaseRef        string
	HeadSHA        string
	MergeCommitSHA string // only for merged PRs
}

var scheduleIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (req *ApprovalRequest) validate() error {
	id := req.ScheduleID
	switch {
	case !scheduleIDRE.MatchString(id) || strings.Contains(id, "..") || strings.HasSuffix(id, ".lock") || strings.HasSuffix(id, "."):
		return fmt.Errorf("schedule id %q cannot name a branch (letters, digits, '_', '.', '-'; no '..', no trailing '.' or '.lock')", id)
	case strings.TrimSpace(req.Title) == "":
		return errors.New("the pull request title is empty")
	case utf8.RuneCountInString(req.Body) > maxBody:
		return fmt.Errorf("the pull request body has %d characters; GitHub accepts at most %d", utf8.RuneCountInString(req.Body), maxBody)
	case req.Token == nil:
		return errors.New("no token function")
	}
	if err := checkPath(req.Path); err != nil {
		return err
	}
	for _, l := range req.Labels {
		if l == "" || utf8.RuneCountInString(l) > 50 {
			return fmt.Errorf("label %q must have 1 to 50 characters", l)
		}
	}
	return nil
}

func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(p, "../") || p == ".." || strings.HasPrefix(p, ".git/") {
		return fmt.Errorf("path %q must be a clean path relative to the repository root", p)
	}
	return nil
}

// EnsureApprovalPR creates the branch from Base's tip, commits the token
// file on it (contents API), opens the PR with labels; if an open PR for
// that branch already exists, updates its title/body/labels/token instead
// (no duplicate). Returns created=true only when a new PR was opened.
//
// A leftover branch of an earlier, closed approval is reset to Base's tip
// first. Token commits carry "[skip ci]". If a step fails after the PR was
// opened, the PR is returned with created=true along with the error;
// calling again completes it.
//
// Opened with a workflow's GITHUB_TOKEN, the PR starts no workflows (see
// the package comment).
func (c *Client) EnsureApprovalPR(ctx context.Context, req ApprovalRequest) (pr PR, created bool, err error) {
	if err := req.validate(); err != nil {
		return PR{}, false, c.failf("approval PR for %s: %v", req.ScheduleID, err)
	}
	branch := ApprovalBranch(req.ScheduleID)
	base := req.Base
	if base == "" {
		if base, err = c.DefaultBranch(ctx); err != nil {
			return PR{}, false, err
		}
	}
	existing, err := c.openPR(ctx, branch, base)
	if err != nil {
		return PR{}, false, c.fail(err, "approval PR for %s: look for an open pull request from %s", req.ScheduleID, branch)
	}
	if existing != nil {
		pr, err := c.updateApprovalPR(ctx, existing, req, branch, base)
		return pr, false, err
	}

	ref, _, err := c.gh.Git.GetRef(ctx, c.owner, c.repo, "refs/heads/"+base)
	if err != nil {
		return PR{}, false, c.fail(err, "approval PR for %s: read base branch %s", req.ScheduleID, base)
	}
	if err := c.resetBranch(ctx, branch, ref.GetObject().GetSHA()); err != nil {
		return PR{}, false, c.fail(err, "approval PR for %s: create branch %s", req.ScheduleID, branch)
	}
	first := req.Token(0)
	put, err := c.putFile(ctx, branch, req.Path, first, fmt.Sprintf("astra: request approval for %s [skip ci]", req.ScheduleID), nil)
	if err != nil {
		return PR{}, false, c.fail(err, "approval PR for %s: commit %s on %s", req.ScheduleID, req.Path, branch)
	}
	if put.commit == "" {
		// GitHub would refuse the PR with "No commits between".
		return PR{}, false, c.failf("approval PR for %s: %s on %s already holds this token; nothing to approve", req.ScheduleID, req.Path, base)
	}
	ghPR, _, err := c.gh.PullRequests.Create(retryablePOST(ctx), c.owner, c.repo, &github.NewPullRequest{
		Title: ptr(req.Title),
		Head:  ptr(branch),
		Base:  ptr(base),
		Body:  ptr(req.Body),
	})
	if err != nil {
		if isStatus(err, http.StatusUnprocessableEntity) && strings.Contains(ghMessages(err), "already exists") {
			// Another run opened it meanwhile (or our first attempt did):
			// converge on that one.
			if existing, lerr := c.openPR(ctx, branch, base); lerr == nil && existing != nil {
				pr, err := c.updateApprovalPR(ctx, existing, req, branch, base)
				return pr, false, err
			}
		}
		return PR{}, false, c.fail(err, "approval PR for %s: open pull request %s → %s", req.ScheduleID, branch, base)
	}
	pr = toPR(ghPR)
	if len(req.Labels) > 0 {
		if err := c.addLabels(ctx, pr.Number, req.Labels); err != nil {
			return pr, true, c.fail(err, "approval PR for %s: label #%d", req.ScheduleID, pr.Number)
		}
	}
	final := req.Token(pr.Number)
	if !bytes.Equal(final, first) {
		put, err = c.putFile(ctx, branch, req.Path, final, fmt.Sprintf("astra: approval token for %s names #%d [skip ci]", req.ScheduleID, pr.Number), put)
		if err != nil {
			return pr, true, c.fail(err, "approval PR for %s: commit token naming #%d", req.ScheduleID, pr.Number)
		}
	}
	if put.commit != "" {
		// The PR object was read before the last push; GitHub updates a
		// PR's head asynchronously, the commit we made is authoritative.
		pr.HeadSHA = put.commit
	}
	return pr, true, nil
}

func (c *Client) updateApprovalPR(ctx context.Context, existing *github.PullRequest, req ApprovalRequest, branch, base string) (PR, error) {
	n := existing.GetNumber()
	edit := &github.PullRequest{}
	changed := false
	if existing.GetTitle() != req.Title {
		edit.Title, changed = ptr(req.Title), true
	}
	if existing.GetBody() != req.Body {
		edit.Body, changed = ptr(req.Body), true
	}
	if req.Base != "" && existing.GetBase().GetRef() != base {
		edit.Base, changed = &github.PullRequestBranch{Ref: ptr(base)}, true
	}
	if changed {
		updated, _, err := c.gh.PullRequests.Edit(ctx, c.owner, c.repo, n, edit)
		if err != nil {
			return toPR(existing), c.fail(err, "approval PR for %s: update #%d", req.ScheduleID, n)
		}
		existing = updated
	}
	var missing []string
	for _, want := range req.Labels {
		have := false
		for _, l := range existing.Labels {
			have = have || strings.EqualFold(l.GetName(), want)
		}
		if !have {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		if err := c.addLabels(ctx, n, missing); err != nil {
			return toPR(existing), c.fail(err, "approval PR for %s: label #%d", req.ScheduleID, n)
		}
	}
	pr := toPR(existing)
	put, err := c.putFile(ctx, branch, req.Path, req.Token(n), fmt.Sprintf("astra: update approval token for %s (#%d) [skip ci]", req.ScheduleID, n), nil)
	if err != nil {
		return pr, c.fail(err, "approval PR for %s: update %s on %s", req.ScheduleID, req.Path, branch)
	}
	if put.commit != "" {
		pr.HeadSHA = put.commit
	}
	return pr, nil
}

// openPR finds the open pull request from branch (in this repository, not a
// fork), preferring one into base.
func (c *Client) openPR(ctx context.Context, branch, base string) (*github.PullRequest, error) {
	prs, err := listAll(func(o github.ListOptions) ([]*github.PullRequest, *github.Response, error) {
		return c.gh.PullRequests.List(ctx, c.owner, c.repo, &github.PullRequestListOptions{
			State: "open", Head: c.owner + ":" + branch, ListOptions: o,
		})
	})
	if err != nil {
		return nil, err
	}
	var found *github.PullRequest
	for _, p := range prs {
		if p.GetHead().GetRef() != branch {
			continue
		}
		if r := p.GetHead().GetRepo(); r != nil && !strings.EqualFold(r.GetFullName(), c.Repository()) {
			continue
		}
		if found == nil || p.GetBase().GetRef() == base {
			found = p
		}
	}
	return found, nil
}

// resetBranch creates branch at sha, or force-moves a leftover branch there.
// Only called when no open PR uses the branch.
func (c *Client) resetBranch(ctx context.Context, branch, sha string) error {
	_, _, err := c.gh.Git.CreateRef(retryablePOST(ctx), c.owner, c.repo, &github.Reference{
		Ref:    ptr("refs/heads/" + branch),
		Object: &github.GitObject{SHA: ptr(sha)},
	})
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusUnprocessableEntity) || !strings.Contains(ghMessages(err), "already exists") {
		return err
	}
	_, _, err = c.gh.Git.UpdateRef(ctx, c.owner, c.repo, &github.Reference{
		Ref:    ptr("refs/heads/" + branch),
		Object: &github.GitObject{SHA: ptr(sha)},
	}, true)
	return err
}

// fileState is a file's blob SHA on a branch and the commit that wrote it.
type fileState struct {
	blob   string
	commit string // "" when nothing was committed
	data   []byte
}

// putFile makes branch:path hold content with the contents API, committing
// only if it differs. known, when set, is the file's state from our own
// previous write (saves a read). A 409/422 from a stale SHA (another writer,
// or a retried PUT that had succeeded) is resolved by reading again.
func (c *Client) putFile(ctx context.Context, branch, p string, content []byte, message string, known *fileState) (*fileState, error) {
	cur := known
	for attempt := 0; ; attempt++ {
		if cur == nil {
			var err error
			if cur, err = c.readFile(ctx, branch, p); err != nil {
				return nil, err
			}
		}
		if cur.blob != "" && bytes.Equal(cur.data, content) {
			return &fileState{blob: cur.blob, data: content}, nil
		}
		opts := &github.RepositoryContentFileOptions{
			Message: ptr(message),
			Content: content,
			Branch:  ptr(branch),
		}
		if cur.blob != "" {
			opts.SHA = ptr(cur.blob)
		}
		res, _, err := c.gh.Repositories.UpdateFile(ctx, c.owner, c.repo, p, opts)
		if err == nil {
			return &fileState{blob: res.GetContent().GetSHA(), commit: res.GetSHA(), data: content}, nil
		}
		stale := isStatus(err, http.StatusConflict) ||
			(isStatus(err, http.StatusUnprocessableEntity) && strings.Contains(ghMessages(err), `"sha" wasn't supplied`))
		if !stale || attempt >= 2 {
			return nil, err
		}
		cur = nil
	}
}

// readFile returns the file's state on ref; blob "" when it does not exist.
func (c *Client) readFile(ctx context.Context, ref, p string) (*fileState, error) {
	fc, dir, _, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, p, &github.RepositoryContentGetOptions{Ref: ref})
	if isStatus(err, http.StatusNotFound) {
		return &fileState{}, nil
	}
	if err != nil {
		return nil, err
	}
	if fc == nil || dir != nil {
		return nil, fmt.Errorf("%s is a directory", p)
	}
	data, err := fileContent(fc)
	if err != nil {
		return nil, err
	}
	return &fileState{blob: fc.GetSHA(), data: data}, nil
}

func fileContent(fc *github.RepositoryContent) ([]byte, error) {
	if fc.GetType() != "file" {
		return nil, fmt.Errorf("%s is a %s, not a file", fc.GetPath(), fc.GetType())
	}
	if fc.GetEncoding() == "none" || (fc.Content == nil && fc.GetSize() > 0) {
		return nil, fmt.Errorf("%s is too large for the contents API (%d bytes)", fc.GetPath(), fc.GetSize())
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", fc.GetPath(), err)
	}
	return []byte(s), nil
}

func toPR(p *github.PullRequest) PR {
	pr := PR{
		Number:   p.GetNumber(),
		URL:      p.GetHTMLURL(),
		State:    p.GetState(),
		Merged:   p.GetMerged(),
		MergedBy: p.GetMergedBy().GetLogin(),
		MergedAt: p.GetMergedAt().Time,
		ClosedAt: p.GetClosedAt().Time,
		HeadRef:  p.GetHead().GetRef(),
		BaseRef:  p.GetBase().GetRef(),
		HeadSHA:  p.GetHead().GetSHA(),
	}
	if pr.Merged {
		pr.MergeCommitSHA = p.GetMergeCommitSHA()
	}
	return pr
}

// PullRequest reads a pull request. It fills MergedBy/MergedAt, and for
// closed-unmerged PRs ClosedBy (the actor of the last "closed" issue event)
// and CloseComment (the closer's last comment).
func (c *Client) PullRequest(ctx context.Context, number int) (PR, error) {
	p, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return PR{}, c.fail(err, "read pull request #%d", number)
	}
	pr := toPR(p)
	if pr.State != "closed" || pr.Merged {
		return pr, nil
	}
	events, err := listAll(func(o github.ListOptions) ([]*github.IssueEvent, *github.Response, error) {
		return c.gh.Issues.ListIssueEvents(ctx, c.owner, c.repo, number, &o)
	})
	if err != nil {
		return pr, c.fail(err, "read events of pull request #%d", number)
	}
	for _, e := range events {
		if e.GetEvent() == "closed" {
			pr.ClosedBy = e.GetActor().GetLogin()
		}
	}
	if pr.ClosedBy == "" {
		return pr, nil
	}
	comments, err := c.comments(ctx, number, time.Time{})
	if err != nil {
		return pr, c.fail(err, "read comments of pull request #%d", number)
	}
	for _, cm := range comments {
		if strings.EqualFold(cm.GetUser().GetLogin(), pr.ClosedBy) {
			pr.CloseComment = strings.TrimSpace(markerRE.ReplaceAllString(cm.GetBody(), ""))
		}
	}
	return pr, nil
}

// ClosePullRequest comments (when comment is not empty), then closes the
// pull request; used when an approval expires. Closing a closed PR does
// nothing; a merged PR returns ErrMerged (it was approved meanwhile). The
// comment is posted once even if this is retried.
func (c *Client) ClosePullRequest(ctx context.Context, number int, comment string) error {
	p, _, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return c.fail(err, "close pull request #%d", number)
	}
	if p.GetMerged() {
		return &opError{msg: fmt.Sprintf("forge: close pull request #%d: it was merged by %s", number, p.GetMergedBy().GetLogin()), err: ErrMerged}
	}
	if p.GetState() == "closed" {
		return nil
	}
	if comment != "" {
		if err := c.CommentIssue(ctx, number, comment, fmt.Sprintf("close-%d", number)); err != nil {
			return err
		}
	}
	_, _, err = c.gh.PullRequests.Edit(ctx, c.owner, c.repo, number, &github.PullRequest{State: ptr("closed")})
	if err != nil {
		if p, _, gerr := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number); gerr == nil && p.GetMerged() {
			return &opError{msg: fmt.Sprintf("forge: close pull request #%d: it was merged by %s", number, p.GetMergedBy().GetLogin()), err: ErrMerged}
		}
		return c.fail(err, "close pull request #%d", number)
	}
	return nil
}

// RequestReviewers asks GitHub for the review of members on pull request
// number: logins, and teams as @org/team. GitHub takes teams of the
// repository's owner only; one of another organisation is left out and
// named in the error, after the others were asked. A request made twice
// changes nothing, so it is retried.
func (c *Client) RequestReviewers(ctx context.Context, number int, members []string) error {
	var users, teams, foreign []string
	for _, m := range members {
		org, slug, isTeam := strings.Cut(strings.TrimPrefix(m, "@"), "/")
		switch {
		case !isTeam:
			users = append(users, org)
		case strings.EqualFold(org, c.owner):
			teams = append(teams, slug)
		default:
			foreign = append(foreign, m)
		}
	}
	if len(users) > 0 || len(teams) > 0 {
		_, _, err := c.gh.PullRequests.RequestReviewers(retryablePOST(ctx), c.owner, c.repo, number,
			github.ReviewersRequest{Reviewers: users, TeamReviewers: teams})
		if err != nil {
			return c.fail(err, "request the review of %s on #%d", strings.Join(append(users, teams...), ", "), number)
		}
	}
	if len(foreign) > 0 {
		return c.failf("request the review of %s on #%d: GitHub requests reviews from teams of %s only", strings.Join(foreign, ", "), number, c.owner)
	}
	return nil
}

// addLabels adds labels to an issue or pull request in the body form
// GitHub's description documents, {"labels": [...]} (go-github's
// AddLabelsToIssue sends a bare array, which GitHub accepts but does not
// describe). Adding a label twice changes nothing, so it is retried.
func (c *Client) addLabels(ctx context.Context, number int, labels []string) error {
	u := fmt.Sprintf("repos/%s/%s/issues/%d/labels", c.owner, c.repo, number)
	req, err := c.gh.NewRequest(http.MethodPost, u, map[string][]string{"labels": labels})
	if err != nil {
		return err
	}
	_, err = c.gh.Do(retryablePOST(ctx), req, nil)
	return err
}
