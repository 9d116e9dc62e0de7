// Package posture checks the repository's safety posture: the GitHub
// settings and files astra's guarantees rest on (docs/security.md, "The
// documented setup"). `astra doctor` prints every check with its fix;
// before the first tier-2 run of a run is admitted, the runner asks
// whether tier 2 may run (Tier2).
//
// A check reads GitHub through Forge at the moment of use. What the token
// may not read is "unknown", never a pass: a workflow's GITHUB_TOKEN
// cannot see secrets, classic branch protection or the default workflow
// permissions, which is why the documented setup uses rulesets (readable
// by any token) for what tier 2 needs.
package posture

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/model"
)

// Status is a check's verdict.
type Status string

const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Warn    Status = "warn"    // works, but could be safer; never blocks
	Unknown Status = "unknown" // could not be told (no token, a token that may not read it, GitHub down)
)

// Names of the checks, stable for --json and the ledger.
const (
	LedgerKey          = "ledger-key"
	LedgerBranchRules  = "ledger-branch-rules"
	DefaultBranchRules = "default-branch-rules"
	LedgerBranch       = "ledger-branch"
	CodeOwners         = "codeowners"
	Workflows          = "workflows"
	Environment        = "environment"
	KeySecret          = "ledger-key-secret"
	WorkflowDefaults   = "workflow-permissions"
	Sandbox            = "sandbox"
	ApprovalSecret     = "approval-secret"
)

// Check is one verdict about the posture.
type Check struct {
	Name   string `json:"name"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	Found  string `json:"found"`
	Fix    string `json:"fix,omitempty"`
	// Tier2: tier 2 runs only when this check passes (or warns).
	Tier2 bool `json:"tier2"`
}

func (c Check) String() string { return fmt.Sprintf("%s: %s (%s)", c.Name, c.Status, c.Found) }

// Forge is the part of GitHub's API the checks read (*forge.Client).
type Forge interface {
	DefaultBranch(ctx context.Context) (string, error)
	BranchRules(ctx context.Context, branch string) (forge.BranchRules, error)
	BranchProtection(ctx context.Context, branch string) (*forge.Protection, error)
	Environment(ctx context.Context, name string) (forge.Environment, error)
	RepoSecretExists(ctx context.Context, name string) (bool, error)
	DefaultWorkflowPermissions(ctx context.Context) (forge.WorkflowPermissions, error)
}

// Input is what the checks look at.
type Input struct {
	Root     string // the repository's checkout
	Policies *model.Policies
	// Repository is "owner/repo" for the fixes' commands; "" writes gh's
	// {owner}/{repo} placeholders.
	Repository string
	// LedgerBranch is the ledger_branch setting; "" is the checked-out
	// branch, which in CI is the default branch.
	LedgerBranch string
	// Forge reads GitHub; nil without a token: every API check is unknown.
	Forge Forge
	Key   Key
	// Run: a run is about to admit a tier-2 run (it must hold the ledger
	// key itself), rather than a person asking.
	Run bool
	// Tier2Only checks only what tier 2 needs.
	Tier2Only bool
	// Sandbox says whether the tool sandbox works here (nil error); nil
	// when this build cannot tell.
	Sandbox func() error
	// ApprovalSecret: ASTRA_APPROVAL_SECRET is set in this process.
	ApprovalSecret bool
}

// Run checks the posture. Checks that need GitHub are unknown when it
// cannot answer; the error is then the outage (errkind.ErrInfra), for a
// caller that must not take unknown for an answer.
func Run(ctx context.Context, in Input) ([]Check, error) {
	p := &probe{in: in, ctx: ctx}
	p.defaultBranch()
	out := []Check{p.ledgerKey(), p.ledgerBranchRules(), p.defaultBranchRules()}
	if !in.Tier2Only {
		out = append(out, p.ledgerBranch())
	}
	out = append(out, p.codeOwners(), p.workflows(), p.sandbox())
	if !in.Tier2Only {
		out = append(out, p.environment(), p.keySecret(), p.workflowDefaults(), p.approvalSecret())
	}
	return out, errors.Join(p.outages...)
}

// Tier2 reports whether tier 2 may run with these checks, and the checks
// that stop it. Unknown is not a pass.
func Tier2(checks []Check) (ok bool, failing []Check) {
	for _, c := range checks {
		if c.Tier2 && c.Status != Pass && c.Status != Warn {
			failing = append(failing, c)
		}
	}
	return len(failing) == 0, failing
}

// Summary is failing checks in one line, for a ledger event.
func Summary(failing []Check) string {
	var parts []string
	for _, c := range failing {
		parts = append(parts, fmt.Sprintf("%s %s: %s", c.Name, c.Status, c.Found))
	}
	return strings.Join(parts, "; ")
}

// probe runs the checks of one Run, remembering what GitHub said.
type probe struct {
	in      Input
	ctx     context.Context
	def     string // the default branch; "" when unknown
	defErr  error
	outages []error
}

// unknown describes a GitHub answer that decides nothing: no token, a
// token that may not read it, or an outage (remembered for Run's error).
func (p *probe) unknown(c Check, err error) Check {
	c.Status = Unknown
	switch {
	case err == nil:
		c.Found = "no GitHub token, so GitHub was not asked"
	case errors.Is(err, errkind.ErrInfra):
		p.outages = append(p.outages, err)
		c.Found = "GitHub did not answer: " + err.Error()
	case errors.Is(err, forge.ErrNoAccess):
		c.Found = "this token may not read it: " + err.Error()
	default:
		c.Found = err.Error()
	}
	return c
}

func (p *probe) defaultBranch() {
	if p.in.Forge == nil {
		return
	}
	p.def, p.defErr = p.in.Forge.DefaultBranch(p.ctx)
}

// ledgerBranchName is the branch the ledger is committed to in CI; "" when
// it is the default branch and that is unknown.
func (p *probe) ledgerBranchName() string {
	if p.in.LedgerBranch != "" {
		return p.in.LedgerBranch
	}
	return p.def
}

// repo is the repository in a gh api path.
func (p *probe) repo() string { return repoPath(p.in.Repository) }

func repoPath(repository string) string {
	if repository == "" {
		return "{owner}/{repo}"
	}
	return repository
}
