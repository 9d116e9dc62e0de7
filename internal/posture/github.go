package posture

import (
	"errors"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/forge"
)

// The checks GitHub answers.

// LedgerRuleset is the gh command that creates the ruleset protecting the
// ledger branch: no force pushes, no deletion.
func LedgerRuleset(repository, branch string) string {
	return rulesetCommand(repository, "astra ledger", `"refs/heads/`+jsonString(branch)+`"`,
		`{"type":"deletion"},{"type":"non_fast_forward"}`)
}

// DefaultRuleset is the gh command that creates the ruleset protecting
// the default branch: pull requests with a code owner's review (stale
// reviews dismissed), no force pushes, no deletion.
func DefaultRuleset(repository string) string {
	return rulesetCommand(repository, "astra default branch", `"~DEFAULT_BRANCH"`,
		`{"type":"deletion"},{"type":"non_fast_forward"},{"type":"pull_request","parameters":{"required_approving_review_count":1,`+
			`"dismiss_stale_reviews_on_push":true,"require_code_owner_review":true,"require_last_push_approval":false,"required_review_thread_resolution":false}}`)
}

func rulesetCommand(repository, name, include, rules string) string {
	body := `{"name":"` + name + `","target":"branch","enforcement":"active","conditions":{"ref_name":{"include":[` + include + `],"exclude":[]}},"rules":[` + rules + `]}`
	return fmt.Sprintf("echo '%s' | gh api -X POST repos/%s/rulesets --input -", body, repoPath(repository))
}

// EnvironmentCommands are the gh commands that create the environment with
// the default branch as its only deployment branch.
func EnvironmentCommands(repository, env, defaultBranch string) string {
	r := repoPath(repository)
	return fmt.Sprintf(`echo '{"deployment_branch_policy":{"protected_branches":false,"custom_branch_policies":true}}' | gh api -X PUT repos/%s/environments/%s --input - && `+
		`gh api -X POST repos/%s/environments/%s/deployment-branch-policies -f name=%s -f type=branch`, r, env, r, env, shellWord(defaultBranch))
}

// jsonString escapes s for a JSON string in single quotes (branch names
// hold neither quotes nor backslashes, but be safe).
func jsonString(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `'`, `'\''`).Replace(s)
}

func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// branchGuard is what a branch's rules (or classic protection) forbid.
type branchGuard struct {
	noForcePush, noDeletion bool
	pr                      *forge.PullRequestRule
	source                  string // "ruleset", "classic protection"
}

// guard reads what protects branch: its rules, and classic protection
// when the rules fall short of want (and the token may read it).
func (p *probe) guard(branch string, want func(branchGuard) bool) (branchGuard, error) {
	rules, err := p.in.Forge.BranchRules(p.ctx, branch)
	if err != nil && !errors.Is(err, forge.ErrNoAccess) {
		return branchGuard{}, err
	}
	if err != nil {
		rules = forge.BranchRules{}
	}
	g := branchGuard{noForcePush: rules.Has("non_fast_forward"), noDeletion: rules.Has("deletion"), pr: rules.PullRequest, source: "rulesets"}
	if want(g) {
		return g, nil
	}
	prot, perr := p.in.Forge.BranchProtection(p.ctx, branch)
	switch {
	case perr != nil && err != nil:
		return g, fmt.Errorf("%w; %w", err, perr) // neither could be read
	case perr != nil:
		if errors.Is(perr, forge.ErrNoAccess) {
			// The rules are known to fall short; classic protection could
			// make up for them, which this token cannot tell.
			return g, &shortfall{g: g, err: perr}
		}
		return g, perr
	case prot == nil:
		return g, nil
	}
	c := branchGuard{source: "rulesets and classic protection", pr: g.pr}
	c.noForcePush = g.noForcePush || !prot.AllowForcePushes
	c.noDeletion = g.noDeletion || !prot.AllowDeletions
	if r := prot.RequiredReviews; r != nil && (c.pr == nil || r.RequireCodeOwnerReview && !c.pr.RequireCodeOwnerReview) {
		c.pr = r
	}
	return c, nil
}

// shortfall: a branch's rulesets fall short, and classic protection,
// which might make up for them, cannot be read with this token.
type shortfall struct {
	g   branchGuard
	err error
}

func (e *shortfall) Error() string {
	return fmt.Sprintf("its rulesets: %s; classic branch protection might forbid the rest, but this token may not read it "+
		"(a workflow's GITHUB_TOKEN never can; a ruleset it can read)", e.g.describe())
}

func (e *shortfall) Unwrap() error { return e.err }

// guardUnknown is the check when the guard of branch cannot be told.
func (p *probe) guardUnknown(c Check, branch string, err error) Check {
	c = p.unknown(c, err)
	var sf *shortfall
	if errors.As(err, &sf) {
		c.Found = sf.Error()
	}
	c.Found = branch + ": " + c.Found
	return c
}

func (g branchGuard) describe() string {
	var has []string
	if g.noForcePush {
		has = append(has, "no force pushes")
	}
	if g.noDeletion {
		has = append(has, "no deletion")
	}
	if g.pr != nil {
		pr := "pull requests"
		if g.pr.RequireCodeOwnerReview {
			pr += " with code-owner review"
		}
		if g.pr.DismissStaleReviewsOnPush {
			pr += ", stale reviews dismissed"
		}
		has = append(has, pr)
	}
	if len(has) == 0 {
		return "nothing forbidden"
	}
	return strings.Join(has, ", ")
}

func (p *probe) ledgerBranchRules() Check {
	c := Check{Name: LedgerBranchRules, Title: "the ledger branch forbids force pushes and deletion", Tier2: true}
	branch := p.ledgerBranchName()
	c.Fix = LedgerRuleset(p.in.Repository, branch)
	switch {
	case p.in.Forge == nil:
		return p.unknown(c, nil)
	case branch == "":
		return p.unknown(c, p.defErr)
	}
	g, err := p.guard(branch, func(g branchGuard) bool { return g.noForcePush && g.noDeletion })
	if err != nil {
		return p.guardUnknown(c, branch, err)
	}
	c.Found = fmt.Sprintf("%s: %s (%s)", branch, g.describe(), g.source)
	if g.noForcePush && g.noDeletion {
		c.Status, c.Fix = Pass, ""
		return c
	}
	c.Status = Fail
	c.Found += ": a writer can rewind or delete the ledger"
	return c
}

func (p *probe) defaultBranchRules() Check {
	c := Check{Name: DefaultBranchRules, Title: "the default branch requires code-owner review, forbids force pushes and deletion", Tier2: true}
	c.Fix = DefaultRuleset(p.in.Repository)
	switch {
	case p.in.Forge == nil:
		return p.unknown(c, nil)
	case p.defErr != nil:
		return p.unknown(c, p.defErr)
	}
	good := func(g branchGuard) bool {
		return g.noForcePush && g.noDeletion && g.pr != nil && g.pr.RequireCodeOwnerReview && g.pr.DismissStaleReviewsOnPush
	}
	g, err := p.guard(p.def, good)
	if err != nil {
		return p.guardUnknown(c, p.def, err)
	}
	c.Found = fmt.Sprintf("%s: %s (%s)", p.def, g.describe(), g.source)
	if good(g) {
		c.Status, c.Fix = Pass, ""
		return c
	}
	c.Status = Fail
	c.Found += ": a writer can change schedules, policies or tool scripts without a code owner"
	return c
}

func (p *probe) ledgerBranch() Check {
	c := Check{Name: LedgerBranch, Title: "the ledger lives on its own branch"}
	c.Fix = "set ledger_branch: astra-state in .astra.yaml (astra ledger migrate --to-branch astra-state moves an existing ledger)"
	switch {
	case p.in.LedgerBranch == "":
		c.Status, c.Found = Fail, "ledger_branch is not set: the ledger is committed to the checked-out branch, the default branch in CI, where required pull requests stop astra's pushes"
	case p.in.Forge == nil:
		return p.unknown(c, nil)
	case p.defErr != nil:
		return p.unknown(c, p.defErr)
	case p.in.LedgerBranch == p.def:
		c.Status, c.Found = Fail, fmt.Sprintf("ledger_branch is %s, the default branch, where required pull requests stop astra's pushes", p.def)
	default:
		c.Status, c.Found, c.Fix = Pass, fmt.Sprintf("ledger_branch is %s; the default branch is %s", p.in.LedgerBranch, p.def), ""
	}
	return c
}

func (p *probe) environment() Check {
	trust := p.in.Policies.Trust
	name := trust.EnvironmentName()
	c := Check{Name: Environment, Title: fmt.Sprintf("environment %s deploys from the default branch only", name)}
	def := p.def
	if def == "" {
		def = "<default branch>"
	}
	c.Fix = EnvironmentCommands(p.in.Repository, name, def)
	if p.in.Forge == nil {
		return p.unknown(c, nil)
	}
	env, err := p.in.Forge.Environment(p.ctx, name)
	switch {
	case errors.Is(err, forge.ErrNotFound) && !errors.Is(err, forge.ErrNoAccess):
		c.Status, c.Found = Fail, fmt.Sprintf("there is no environment %s, so the ledger key cannot be kept to the default branch", name)
		return c
	case err != nil:
		return p.unknown(c, err)
	case p.defErr != nil:
		return p.unknown(c, p.defErr)
	}
	switch {
	case env.AnyBranch:
		c.Status, c.Found = Fail, "every branch may deploy to it: a workflow pushed to any branch gets its secrets"
	case env.ProtectedBranches:
		// Protected branches may include the ledger branch, which its
		// ruleset keeps from being rewound, not from being pushed to.
		c.Status, c.Found = Warn, "protected branches may deploy to it, which can include branches anyone with write access pushes to (the ledger branch)"
	default:
		var others []string
		for _, pol := range env.Policies {
			if pol.Type != "branch" || pol.Name != p.def {
				others = append(others, pol.Type+" "+pol.Name)
			}
		}
		if len(others) > 0 {
			c.Status, c.Found = Fail, "besides the default branch, these may deploy to it: "+strings.Join(others, ", ")
			return c
		}
		if len(env.Policies) == 0 {
			c.Status, c.Found = Fail, "its custom deployment policy names no branch, so no job can use it"
			return c
		}
		c.Status, c.Found, c.Fix = Pass, "only "+p.def+" may deploy to it", ""
	}
	return c
}

func (p *probe) keySecret() Check {
	c := Check{Name: KeySecret, Title: KeyEnv + " is not a repository secret"}
	c.Fix = fmt.Sprintf("gh secret delete %s (keep it in environment %s only)", KeyEnv, p.in.Policies.Trust.EnvironmentName())
	if p.in.Forge == nil {
		return p.unknown(c, nil)
	}
	exists, err := p.in.Forge.RepoSecretExists(p.ctx, KeyEnv)
	switch {
	case errors.Is(err, forge.ErrNoAccess):
		c = p.unknown(c, err)
		c.Found = "a workflow's GITHUB_TOKEN can never read secrets; run astra doctor with your own token (GITHUB_TOKEN=$(gh auth token))"
		return c
	case err != nil:
		return p.unknown(c, err)
	case exists:
		c.Status, c.Found = Fail, "it is a repository secret: workflows on every branch can read it"
	default:
		c.Status, c.Found, c.Fix = Pass, "no repository secret of that name", ""
	}
	return c
}

func (p *probe) workflowDefaults() Check {
	c := Check{Name: WorkflowDefaults, Title: "workflows get a read-only token unless they ask"}
	c.Fix = fmt.Sprintf("gh api -X PUT repos/%s/actions/permissions/workflow -f default_workflow_permissions=read -F can_approve_pull_request_reviews=false", p.repo())
	if p.in.Forge == nil {
		return p.unknown(c, nil)
	}
	w, err := p.in.Forge.DefaultWorkflowPermissions(p.ctx)
	if err != nil {
		c = p.unknown(c, err)
		if errors.Is(err, forge.ErrNoAccess) {
			c.Found = "only an administrator's token can read it; run astra doctor with your own token (GITHUB_TOKEN=$(gh auth token))"
		}
		return c
	}
	switch {
	case w.Default != "read":
		c.Status, c.Found = Fail, fmt.Sprintf("the default is %q: a workflow that does not declare permissions can push", w.Default)
	case w.CanApprovePullRequestReviews:
		c.Status, c.Found = Warn, "workflows may approve pull requests"
	default:
		c.Status, c.Found, c.Fix = Pass, "read, and workflows may not approve pull requests", ""
	}
	return c
}

func (p *probe) approvalSecret() Check {
	c := Check{Name: ApprovalSecret, Title: "approval tokens are signed (ASTRA_APPROVAL_SECRET)"}
	c.Fix = "openssl rand -hex 32 | gh secret set ASTRA_APPROVAL_SECRET"
	if p.in.ApprovalSecret {
		c.Status, c.Found, c.Fix = Pass, "ASTRA_APPROVAL_SECRET is set", ""
		return c
	}
	if p.in.Forge != nil {
		if ok, err := p.in.Forge.RepoSecretExists(p.ctx, "ASTRA_APPROVAL_SECRET"); err == nil && ok {
			c.Status, c.Found, c.Fix = Pass, "ASTRA_APPROVAL_SECRET is a repository secret", ""
			return c
		}
	}
	c.Status, c.Found = Warn, "ASTRA_APPROVAL_SECRET is not set here: approval tokens are bound to their pull request, but not signed"
	return c
}

func (p *probe) sandbox() Check {
	c := Check{Name: Sandbox, Title: "tools run in the sandbox", Tier2: true}
	c.Fix = "run astra on Linux with Landlock enabled (GitHub's ubuntu runners have it)"
	if p.in.Sandbox == nil {
		c.Status, c.Found = Unknown, "this build of astra cannot tell whether tools run in a sandbox"
		return c
	}
	if err := p.in.Sandbox(); err != nil {
		c.Status, c.Found = Fail, err.Error()
		return c
	}
	c.Status, c.Found, c.Fix = Pass, "available", ""
	return c
}
