package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/astra-gitops/astra/internal/errkind"
)

// The repository's settings that astra's safety rests on (docs/security.md),
// read at the moment of use by `astra doctor` and before a tier-2 run.
// Every answer is classified where it arises:
//
//   - GitHub unreachable, rate-limited or failing (5xx): errkind.ErrInfra;
//     the check is not answered, a later run asks again;
//   - 403: this token may not read the setting (ErrNoAccess); an answer,
//     "cannot tell with this token", not a failure of what is checked;
//   - 404 of the thing asked about: it does not exist, said in the result
//     where the API allows telling that from an invisible repository.
//
// What a workflow's GITHUB_TOKEN can read: the rules of a branch and the
// repository (metadata: read, always granted); environments and their
// deployment branch policies only with `actions: read`; never secrets,
// classic branch protection or the default workflow permissions (they need
// the administration or secrets permission, which it cannot have).

// ErrNoAccess is matched (errors.Is) by an answer the token may not read.
var ErrNoAccess = errors.New("the token cannot read this")

// sentinel wraps an error with a sentinel without changing its message.
type sentinel struct {
	err, is error
}

func (e *sentinel) Error() string   { return e.err.Error() }
func (e *sentinel) Unwrap() []error { return []error{e.err, e.is} }

// classify describes err like fail and gives it its kind (see above).
func (c *Client) classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	e := c.fail(err, format, args...)
	var te *TransportError
	var rl *RateLimitError
	switch {
	case errors.As(err, &te), errors.As(err, &rl), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		isStatus(err, http.StatusTooManyRequests), statusAtLeast(err, 500):
		return errkind.Infra(e)
	case isStatus(err, http.StatusForbidden):
		return errkind.Usage(&sentinel{e, ErrNoAccess})
	}
	return errkind.Usage(e)
}

func statusAtLeast(err error, code int) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= code
	}
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= code
}

// escapeRef escapes a branch name for a path, keeping its slashes (GitHub
// reads the rest of the path as the branch).
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// DefaultBranch is the repository's default branch (GET /repos/{o}/{r}).
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", c.classify(err, "read repository %s", c.Repository())
	}
	if r.GetDefaultBranch() == "" {
		return "", errkind.Usage(c.failf("repository %s has no default branch (is it empty?)", c.Repository()))
	}
	return r.GetDefaultBranch(), nil
}

// BranchRules are the active rules of every ruleset that applies to a
// branch (rulesets in "evaluate" mode do not count).
type BranchRules struct {
	Types []string // rule types, each once: "deletion", "non_fast_forward", "pull_request", ...
	// PullRequest is the strictest of the pull_request rules; nil without one.
	PullRequest *PullRequestRule
	Rulesets    []int64 // the rulesets the rules come from
}

// PullRequestRule is what a pull_request rule asks of a merge.
type PullRequestRule struct {
	RequiredApprovingReviewCount int
	RequireCodeOwnerReview       bool
	DismissStaleReviewsOnPush    bool
	RequireLastPushApproval      bool
}

// Has reports whether a rule of type t applies.
func (r BranchRules) Has(t string) bool {
	for _, x := range r.Types {
		if x == t {
			return true
		}
	}
	return false
}

// ruleJSON is a repository-rule-detailed: go-github's RepositoryRule
// forgets rule types it does not know and where each rule comes from.
type ruleJSON struct {
	Type       string                            `json:"type"`
	Parameters *github.PullRequestRuleParameters `json:"parameters,omitempty"`
	RulesetID  int64                             `json:"ruleset_id"`
}

// BranchRules reads the rules that apply to branch (GET
// /repos/{o}/{r}/rules/branches/{branch}; any token that can read the
// repository may). The branch need not exist. A plan without rulesets for
// this repository answers 403 (ErrNoAccess).
func (c *Client) BranchRules(ctx context.Context, branch string) (BranchRules, error) {
	// go-github's GetRulesForBranch neither pages nor escapes the branch.
	u := fmt.Sprintf("repos/%s/%s/rules/branches/%s", c.owner, c.repo, escapeRef(branch))
	rules, err := listAll(func(o github.ListOptions) ([]*ruleJSON, *github.Response, error) {
		req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("%s?per_page=%d&page=%d", u, o.PerPage, max(o.Page, 1)), nil)
		if err != nil {
			return nil, nil, err
		}
		var page []*ruleJSON
		resp, err := c.gh.Do(ctx, req, &page)
		return page, resp, err
	})
	if err != nil {
		return BranchRules{}, c.classify(err, "read the rules of branch %s", branch)
	}
	var out BranchRules
	for _, r := range rules {
		if !out.Has(r.Type) {
			out.Types = append(out.Types, r.Type)
		}
		if !containsID(out.Rulesets, r.RulesetID) {
			out.Rulesets = append(out.Rulesets, r.RulesetID)
		}
		if r.Type != "pull_request" || r.Parameters == nil {
			continue
		}
		p := r.Parameters
		if out.PullRequest == nil {
			out.PullRequest = &PullRequestRule{}
		}
		pr := out.PullRequest
		pr.RequiredApprovingReviewCount = max(pr.RequiredApprovingReviewCount, p.RequiredApprovingReviewCount)
		pr.RequireCodeOwnerReview = pr.RequireCodeOwnerReview || p.RequireCodeOwnerReview
		pr.DismissStaleReviewsOnPush = pr.DismissStaleReviewsOnPush || p.DismissStaleReviewsOnPush
		pr.RequireLastPushApproval = pr.RequireLastPushApproval || p.RequireLastPushApproval
	}
	return out, nil
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Protection is a branch's classic protection, as far as astra relies on it.
type Protection struct {
	AllowForcePushes bool
	AllowDeletions   bool
	// RequiredReviews is nil when pull requests are not required.
	RequiredReviews *PullRequestRule
	EnforceAdmins   bool
}

// BranchProtection reads branch's classic protection (GET
// /repos/{o}/{r}/branches/{branch}/protection), nil when the branch is not
// protected. Reading it needs administration: read, which a workflow's
// GITHUB_TOKEN never has (ErrNoAccess).
func (c *Client) BranchProtection(ctx context.Context, branch string) (*Protection, error) {
	p, _, err := c.gh.Repositories.GetBranchProtection(ctx, c.owner, c.repo, branch)
	if errors.Is(err, github.ErrBranchNotProtected) {
		return nil, nil
	}
	if err != nil {
		return nil, c.classify(err, "read the protection of branch %s", branch)
	}
	out := &Protection{
		AllowForcePushes: p.GetAllowForcePushes().Enabled,
		AllowDeletions:   p.GetAllowDeletions().Enabled,
		EnforceAdmins:    p.GetEnforceAdmins().Enabled,
	}
	if r := p.GetRequiredPullRequestReviews(); r != nil {
		out.RequiredReviews = &PullRequestRule{
			RequiredApprovingReviewCount: r.RequiredApprovingReviewCount,
			RequireCodeOwnerReview:       r.RequireCodeOwnerReviews,
			DismissStaleReviewsOnPush:    r.DismissStaleReviews,
			RequireLastPushApproval:      r.RequireLastPushApproval,
		}
	}
	return out, nil
}

// Environment is a deployment environment and which refs may deploy to it.
type Environment struct {
	Name string
	// AnyBranch: no deployment branch policy, every branch and tag may use
	// the environment (and its secrets).
	AnyBranch bool
	// ProtectedBranches: only protected branches may.
	ProtectedBranches bool
	// Policies are the custom deployment branch and tag policies.
	Policies []DeploymentPolicy
}

// DeploymentPolicy is a name pattern of refs that may deploy.
type DeploymentPolicy struct {
	Name string // a branch or tag name pattern
	Type string // "branch" or "tag"
}

// Environment reads an environment (GET /repos/{o}/{r}/environments/{name})
// and its custom deployment branch policies (GET
// .../deployment-branch-policies). An environment that does not exist is
// ErrNotFound. Both need actions: read from a workflow's GITHUB_TOKEN.
func (c *Client) Environment(ctx context.Context, name string) (Environment, error) {
	e, _, err := c.gh.Repositories.GetEnvironment(ctx, c.owner, c.repo, url.PathEscape(name))
	if err != nil {
		return Environment{}, c.classify(err, "read environment %s", name)
	}
	out := Environment{Name: e.GetName()}
	bp := e.DeploymentBranchPolicy
	switch {
	case bp == nil:
		out.AnyBranch = true
	case bp.GetProtectedBranches():
		out.ProtectedBranches = true
	case bp.GetCustomBranchPolicies():
		res, _, err := c.gh.Repositories.ListDeploymentBranchPolicies(ctx, c.owner, c.repo, url.PathEscape(name))
		if err != nil {
			return Environment{}, c.classify(err, "read the deployment branch policies of environment %s", name)
		}
		for _, p := range res.BranchPolicies {
			typ := p.GetType()
			if typ == "" {
				typ = "branch"
			}
			out.Policies = append(out.Policies, DeploymentPolicy{Name: p.GetName(), Type: typ})
		}
		if res.GetTotalCount() > len(res.BranchPolicies) {
			// Only the first page was read: what is left could name any ref.
			out.Policies = append(out.Policies, DeploymentPolicy{Name: fmt.Sprintf("(%d more)", res.GetTotalCount()-len(res.BranchPolicies)), Type: "branch"})
		}
	}
	return out, nil
}

// RepoSecretExists reports whether the repository (not an environment)
// has an Actions secret of that name (GET
// /repos/{o}/{r}/actions/secrets/{name}). Repository secrets reach
// workflows on every branch. A workflow's GITHUB_TOKEN can never ask
// (ErrNoAccess).
func (c *Client) RepoSecretExists(ctx context.Context, name string) (bool, error) {
	_, _, err := c.gh.Actions.GetRepoSecret(ctx, c.owner, c.repo, url.PathEscape(name))
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	if err != nil {
		return false, c.classify(err, "look for the repository secret %s", name)
	}
	return true, nil
}

// WorkflowPermissions are the repository's defaults for GITHUB_TOKEN.
type WorkflowPermissions struct {
	Default string // "read" or "write"
	// CanApprovePullRequestReviews: workflows may approve pull requests.
	CanApprovePullRequestReviews bool
}

// DefaultWorkflowPermissions reads the permissions GITHUB_TOKEN gets when
// a workflow does not say (GET /repos/{o}/{r}/actions/permissions/workflow;
// administration: read, which a workflow's GITHUB_TOKEN never has).
func (c *Client) DefaultWorkflowPermissions(ctx context.Context) (WorkflowPermissions, error) {
	p, _, err := c.gh.Repositories.GetDefaultWorkflowPermissions(ctx, c.owner, c.repo)
	if err != nil {
		return WorkflowPermissions{}, c.classify(err, "read the default workflow permissions")
	}
	return WorkflowPermissions{Default: p.GetDefaultWorkflowPermissions(), CanApprovePullRequestReviews: p.GetCanApprovePullRequestReviews()}, nil
}

// ServerTime is the time GitHub says it is: the Date header of its answer
// to GET /repos/{o}/{r}, which every token may read. A run checks its
// clock against it before it records. Any answer counts, an error status
// too (Date is GitHub's clock whatever it says about access); no answer is
// errkind.ErrInfra.
func (c *Client) ServerTime(ctx context.Context) (time.Time, error) {
	_, resp, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if resp == nil || resp.Response == nil {
		if err == nil {
			err = errors.New("no answer")
		}
		return time.Time{}, errkind.Infra(c.fail(err, "ask GitHub the time"))
	}
	t, perr := http.ParseTime(resp.Header.Get("Date"))
	if perr != nil {
		return time.Time{}, errkind.Infra(c.failf("GitHub answered GET /repos/%s without a Date header", c.Repository()))
	}
	return t.UTC(), nil
}
