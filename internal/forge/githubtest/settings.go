package githubtest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v60/github"
)

// The repository's settings astra's safety rests on: rulesets, classic
// branch protection, environments, Actions secrets and the default
// workflow permissions. Tests set them (AddRuleset, SetBranchProtection,
// SetEnvironment, SetSecret, SetWorkflowPermissions); the API only reads
// them, with GitHub's permission model in small: every token may read the
// rules of a branch; environments need `actions: read` from a bot
// (SetActionsRead) and read access from a person; secrets need a person
// with write access; branch protection and the workflow permissions need
// an administrator (SetAdmin). A workflow's token is a bot, never an
// administrator.

// Ruleset is a branch ruleset of the repository.
type Ruleset struct {
	Name string
	// Enforcement is "active" (the default), "evaluate" or "disabled";
	// only active rulesets apply.
	Enforcement string
	// Include and Exclude are ref_name conditions as GitHub writes them:
	// "~DEFAULT_BRANCH", "~ALL", "refs/heads/main", "refs/heads/release/*".
	Include, Exclude []string
	Rules            []Rule
}

// Rule is one rule of a ruleset.
type Rule struct {
	Type string // "deletion", "non_fast_forward", "pull_request", "required_linear_history", ...
	// PullRequest are the parameters of a pull_request rule.
	PullRequest *github.PullRequestRuleParameters
}

type ruleset struct {
	Ruleset
	id int64
}

// BranchProtection is a branch's classic protection.
type BranchProtection struct {
	AllowForcePushes bool
	AllowDeletions   bool
	EnforceAdmins    bool
	// RequiredReviews, when set, requires pull requests with these reviews.
	RequiredReviews *github.PullRequestReviewsEnforcement
}

// Environment is a deployment environment.
type Environment struct {
	Name string
	// Branches is "all" (the default: no deployment branch policy),
	// "protected" (protected branches only) or "custom" (Policies).
	Branches string
	Policies []DeploymentPolicy
}

// DeploymentPolicy is a custom deployment branch or tag policy.
type DeploymentPolicy struct {
	Name string // name pattern
	Type string // "branch" (default) or "tag"
}

type environment struct {
	Environment
	id       int64
	policies []int64 // ids of Policies
}

type settings struct {
	rulesets     []*ruleset
	protection   map[string]*BranchProtection // by branch
	environments map[string]*environment      // by lower(name)
	secrets      map[string]bool              // repository secrets, by upper(name)
	workflow     github.DefaultWorkflowPermissionRepository
	admins       map[string]bool // lower(login)
	actionsRead  map[string]bool // lower(login) of bots granted actions: read
}

func (s *Server) settings() *settings {
	if s.set == nil {
		s.set = &settings{
			protection: map[string]*BranchProtection{}, environments: map[string]*environment{}, secrets: map[string]bool{},
			admins: map[string]bool{}, actionsRead: map[string]bool{},
			workflow: github.DefaultWorkflowPermissionRepository{DefaultWorkflowPermissions: github.String("read"), CanApprovePullRequestReviews: github.Bool(false)},
		}
	}
	return s.set
}

// AddRuleset adds a ruleset and returns its id.
func (s *Server) AddRuleset(r Ruleset) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Enforcement == "" {
		r.Enforcement = "active"
	}
	rs := &ruleset{Ruleset: r, id: s.newID()}
	s.settings().rulesets = append(s.settings().rulesets, rs)
	return rs.id
}

// SetBranchProtection sets branch's classic protection; nil removes it.
func (s *Server) SetBranchProtection(branch string, p *BranchProtection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.settings().protection, branch)
		return
	}
	cp := *p
	s.settings().protection[branch] = &cp
}

// SetEnvironment creates or replaces an environment.
func (s *Server) SetEnvironment(e Environment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Branches == "" {
		e.Branches = "all"
	}
	env := &environment{Environment: e, id: s.newID()}
	for i := range e.Policies {
		if env.Policies[i].Type == "" {
			env.Policies[i].Type = "branch"
		}
		env.policies = append(env.policies, s.newID())
	}
	s.settings().environments[strings.ToLower(e.Name)] = env
}

// SetSecret creates a repository (not environment) Actions secret.
func (s *Server) SetSecret(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings().secrets[strings.ToUpper(name)] = true
}

// SetWorkflowPermissions sets what GITHUB_TOKEN gets when a workflow does
// not say ("read", the default, or "write") and whether workflows may
// approve pull requests.
func (s *Server) SetWorkflowPermissions(defaultPermissions string, canApprovePullRequestReviews bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings().workflow = github.DefaultWorkflowPermissionRepository{
		DefaultWorkflowPermissions: github.String(defaultPermissions), CanApprovePullRequestReviews: github.Bool(canApprovePullRequestReviews)}
}

// SetAdmin makes login an administrator of the repository (or not).
func (s *Server) SetAdmin(login string, admin bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings().admins[strings.ToLower(login)] = admin
}

// SetActionsRead grants a bot `actions: read`, as a workflow's
// permissions: block does for its GITHUB_TOKEN.
func (s *Server) SetActionsRead(login string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings().actionsRead[strings.ToLower(login)] = ok
}

func (s *Server) isBot(login string) bool { return s.account(login).typ == "Bot" }

// forbid answers 403 as GitHub does for a token without the permission.
func (s *Server) forbid(c *call, userMessage string) {
	msg := "Resource not accessible by integration"
	if !s.isBot(c.login) {
		msg = userMessage
	}
	writeError(c.w, http.StatusForbidden, msg, "https://docs.github.com/rest")
}

// ---- handlers ----

// branchRules serves GET rules/branches/{branch}: the rules of every
// active ruleset whose conditions take the branch (it need not exist).
func (s *Server) branchRules(c *call, branch string) {
	var out []jsonObj
	for _, rs := range s.settings().rulesets {
		if rs.Enforcement != "active" || !s.targets(rs, branch) {
			continue
		}
		for _, r := range rs.Rules {
			o := jsonObj{"type": r.Type, "ruleset_source_type": "Repository", "ruleset_source": s.owner + "/" + s.name, "ruleset_id": rs.id}
			if r.Type == "pull_request" {
				p := r.PullRequest
				if p == nil {
					p = &github.PullRequestRuleParameters{}
				}
				o["parameters"] = p
			}
			out = append(out, o)
		}
	}
	writeJSON(c.w, http.StatusOK, paginate(s, c, nonNil(out)))
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// targets applies a ruleset's ref_name conditions to branch.
func (s *Server) targets(rs *ruleset, branch string) bool {
	match := func(pats []string) bool {
		for _, p := range pats {
			switch p {
			case "~ALL":
				return true
			case "~DEFAULT_BRANCH":
				if branch == s.defaultBranch {
					return true
				}
			default:
				if ok, _ := path.Match(strings.TrimPrefix(p, "refs/heads/"), branch); ok {
					return true
				}
			}
		}
		return false
	}
	return match(rs.Include) && !match(rs.Exclude)
}

// branchProtection serves GET branches/{branch}/protection.
func (s *Server) branchProtection(c *call, branch string) {
	if !s.settings().admins[strings.ToLower(c.login)] {
		s.forbid(c, "Must have admin rights to Repository.")
		return
	}
	if tip, _ := branchTip(c.repo, branch); tip.IsZero() {
		writeError(c.w, http.StatusNotFound, "Branch not found", "https://docs.github.com/rest/branches/branch-protection#get-branch-protection")
		return
	}
	p := s.settings().protection[branch]
	if p == nil {
		writeError(c.w, http.StatusNotFound, "Branch not protected", "https://docs.github.com/rest/branches/branch-protection#get-branch-protection")
		return
	}
	api := s.repoAPI() + "/branches/" + url.PathEscape(branch) + "/protection"
	enabled := func(b bool) jsonObj { return jsonObj{"enabled": b} }
	out := jsonObj{
		"url":                              api,
		"required_signatures":              jsonObj{"url": api + "/required_signatures", "enabled": false},
		"enforce_admins":                   jsonObj{"url": api + "/enforce_admins", "enabled": p.EnforceAdmins},
		"required_linear_history":          enabled(false),
		"allow_force_pushes":               enabled(p.AllowForcePushes),
		"allow_deletions":                  enabled(p.AllowDeletions),
		"block_creations":                  enabled(false),
		"required_conversation_resolution": enabled(false),
		"lock_branch":                      enabled(false),
		"allow_fork_syncing":               enabled(false),
	}
	if r := p.RequiredReviews; r != nil {
		out["required_pull_request_reviews"] = jsonObj{
			"url":                             api + "/required_pull_request_reviews",
			"dismiss_stale_reviews":           r.DismissStaleReviews,
			"require_code_owner_reviews":      r.RequireCodeOwnerReviews,
			"required_approving_review_count": r.RequiredApprovingReviewCount,
			"require_last_push_approval":      r.RequireLastPushApproval,
		}
	}
	writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) mayReadEnvironments(c *call) bool {
	return !s.isBot(c.login) || s.settings().actionsRead[strings.ToLower(c.login)]
}

func (s *Server) withEnvironment(c *call, name string, f func(*call, *environment)) {
	if !s.mayReadEnvironments(c) {
		s.forbid(c, "Resource not accessible by personal access token")
		return
	}
	e := s.settings().environments[strings.ToLower(name)]
	if e == nil {
		notFound(c.w)
		return
	}
	f(c, e)
}

// getEnvironment serves GET environments/{environment_name}.
func (s *Server) getEnvironment(c *call, e *environment) {
	api := s.repoAPI() + "/environments/" + url.PathEscape(e.Name)
	var policy any // null: every branch may deploy
	var rules []jsonObj
	if e.Branches != "all" {
		policy = jsonObj{"protected_branches": e.Branches == "protected", "custom_branch_policies": e.Branches == "custom"}
		rules = append(rules, jsonObj{"id": e.id, "node_id": nodeID("GA", e.id), "type": "branch_policy"})
	}
	writeJSON(c.w, http.StatusOK, jsonObj{
		"id":                       e.id,
		"node_id":                  nodeID("EN", e.id),
		"name":                     e.Name,
		"url":                      api,
		"html_url":                 s.repoHTML() + "/deployments/activity_log?environments_filter=" + url.QueryEscape(e.Name),
		"created_at":               timeJSON(s.created),
		"updated_at":               timeJSON(s.created),
		"protection_rules":         nonNil(rules),
		"deployment_branch_policy": policy,
	})
}

// deploymentPolicies serves GET environments/{environment_name}/deployment-branch-policies.
func (s *Server) deploymentPolicies(c *call, e *environment) {
	var list []jsonObj
	if e.Branches == "custom" {
		for i, p := range e.Policies {
			list = append(list, jsonObj{"id": e.policies[i], "node_id": nodeID("DBP", e.policies[i]), "name": p.Name, "type": p.Type})
		}
	}
	all := len(list)
	writeJSON(c.w, http.StatusOK, jsonObj{"total_count": all, "branch_policies": paginate(s, c, nonNil(list))})
}

// getSecret serves GET actions/secrets/{secret_name}: a repository secret,
// never its value.
func (s *Server) getSecret(c *call, name string) {
	if s.isBot(c.login) || s.readOnly[strings.ToLower(c.login)] {
		s.forbid(c, "Resource not accessible by personal access token")
		return
	}
	if !s.settings().secrets[strings.ToUpper(name)] {
		notFound(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, jsonObj{"name": strings.ToUpper(name), "created_at": timeJSON(s.created), "updated_at": timeJSON(s.created)})
}

// workflowPermissions serves GET actions/permissions/workflow.
func (s *Server) workflowPermissions(c *call) {
	if !s.settings().admins[strings.ToLower(c.login)] {
		s.forbid(c, "Must have admin rights to Repository.")
		return
	}
	w := s.settings().workflow
	writeJSON(c.w, http.StatusOK, jsonObj{"default_workflow_permissions": w.GetDefaultWorkflowPermissions(),
		"can_approve_pull_request_reviews": w.GetCanApprovePullRequestReviews()})
}

// listPullFiles serves GET pulls/{pull_number}/files: what the pull request
// changes from its merge base with the base branch (as the base was when
// it was closed or merged) to its head, renames detected as GitHub does.
func (s *Server) listPullFiles(c *call, is *issue) {
	p := is.pull
	head, base := plumbing.NewHash(p.headSHA), plumbing.NewHash(p.baseSHA)
	if is.state == "open" {
		head, _ = branchTip(c.repo, p.head)
		base, _ = branchTip(c.repo, p.base)
	}
	files, err := changedFiles(c.repo, base, head)
	if err != nil {
		writeError(c.w, http.StatusInternalServerError, "githubtest: "+err.Error(), "")
		return
	}
	var list []jsonObj
	for _, f := range files {
		list = append(list, s.diffEntryJSON(head.String(), f))
	}
	writeJSON(c.w, http.StatusOK, paginate(s, c, nonNil(list)))
}

// fileChange is one file of a diff, with line counts.
type fileChange struct {
	path, previous, status string
	sha                    plumbing.Hash
	additions, deletions   int
}

// changedFiles diffs head against its merge base with base.
func changedFiles(repo *git.Repository, base, head plumbing.Hash) ([]fileChange, error) {
	hc, err := repo.CommitObject(head)
	if err != nil {
		return nil, err
	}
	to, err := hc.Tree()
	if err != nil {
		return nil, err
	}
	from := &object.Tree{}
	if !base.IsZero() {
		bc, err := repo.CommitObject(base)
		if err != nil {
			return nil, err
		}
		bases, err := hc.MergeBase(bc)
		if err != nil {
			return nil, err
		}
		if len(bases) > 0 {
			if from, err = bases[0].Tree(); err != nil {
				return nil, err
			}
		}
	}
	changes, err := object.DiffTreeWithOptions(context.Background(), from, to, object.DefaultDiffTreeOptions)
	if err != nil {
		return nil, err
	}
	var out []fileChange
	for _, ch := range changes {
		f := fileChange{path: ch.To.Name, previous: ch.From.Name, sha: ch.To.TreeEntry.Hash}
		switch {
		case ch.From.Name == "":
			f.status, f.previous = "added", ""
		case ch.To.Name == "":
			f.status, f.path, f.previous, f.sha = "removed", ch.From.Name, "", ch.From.TreeEntry.Hash
		case ch.From.Name != ch.To.Name:
			f.status = "renamed"
		default:
			f.status, f.previous = "modified", ""
		}
		patch, err := ch.Patch()
		if err != nil {
			return nil, err
		}
		for _, st := range patch.Stats() {
			f.additions += st.Addition
			f.deletions += st.Deletion
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// diffEntryJSON is a diff-entry at commit.
func (s *Server) diffEntryJSON(commit string, f fileChange) jsonObj {
	o := jsonObj{
		"sha":          f.sha.String(),
		"filename":     f.path,
		"status":       f.status,
		"additions":    f.additions,
		"deletions":    f.deletions,
		"changes":      f.additions + f.deletions,
		"blob_url":     fmt.Sprintf("%s/blob/%s/%s", s.repoHTML(), commit, escapePath(f.path)),
		"raw_url":      fmt.Sprintf("%s/raw/%s/%s", s.repoHTML(), commit, escapePath(f.path)),
		"contents_url": fmt.Sprintf("%s/contents/%s?ref=%s", s.repoAPI(), escapePath(f.path), commit),
	}
	if f.previous != "" {
		o["previous_filename"] = f.previous
	}
	return o
}
