package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

func (a *app) approvalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, approve and reject approval requests",
		Example: `  astra approvals list
  astra approvals approve deploy_site --by octocat
  astra approvals reject deploy_site --by octocat --reason "not this week"`,
		Long: `Runs that need a human (tier 2, task policy auto_execute: false, tools with
requires_approval, autonomy L0/L1) wait for an approval. In CI each request
is a pull request: merge it to approve one run, close it to reject. Locally,
'approve' writes the token file a merge would bring, and 'reject'
records the rejection in the ledger.`,
	}
	cmd.AddCommand(a.approvalsListCmd(), a.approveCmd("approve"), a.rejectCmd())
	return cmd
}

// approvalsListOptions are `astra approvals list`'s: it has no flags of
// its own.
type approvalsListOptions struct{}

func (a *app) approvalsListCmd() *cobra.Command {
	var o approvalsListOptions
	return &cobra.Command{
		Use:   "list",
		Short: "Show pending approval requests with pull request links and age",
		Example: `  astra approvals list
  astra approvals list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runApprovalsList(cmd.Context(), o) },
	}
}

// runApprovalsList is `astra approvals list`.
func (a *app) runApprovalsList(_ context.Context, _ approvalsListOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	st, err := a.replay()
	if err != nil {
		return err
	}
	repo := introspect.Repository{ServerURL: serverURL(a.getenv), Name: a.getenv("GITHUB_REPOSITORY")}
	rows := introspect.Approvals(cfg, st, a.repo(), repo, a.now())
	return printRows(a, rows, "no pending approvals", "SCHEDULE\tTIER\tSLOT\tSTATUS\tAGE\tEXPIRES\tPULL REQUEST\tWHY", func(r introspect.Approval) string {
		pr := r.URL
		if pr == "" && r.PR != 0 {
			pr = fmt.Sprintf("#%d", r.PR)
		}
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s", r.Name, r.Tier, fmtTime(r.Slot), r.Status, r.Age, fmtTime(r.Expires), pr, r.Why)
	})
}

func serverURL(getenv func(string) string) string {
	if u := getenv("GITHUB_SERVER_URL"); u != "" {
		return u
	}
	return "https://github.com"
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// approveOptions are `astra approve`'s flags and argument.
type approveOptions struct {
	schedule string
	by       string
	ttl      string
	run      runFlags
}

func (a *app) approveCmd(use string) *cobra.Command {
	var o approveOptions
	cmd := &cobra.Command{
		Use:   use + " <schedule>",
		Short: "Approve the pending (or next) run of a schedule without a pull request (recorded)",
		Long: `approve records in the ledger that you approve the schedule's open request,
or its next due run when none is open, and writes the token file
var/approvals/pending/<schedule_id>.token for the record. The ledger entry is
what counts: the next run-due executes the run once. You must hold the approve
permission for the schedule (its task policy's approver_role, else
permissions.approve in policies); who you are comes from GitHub in CI and
from your git config user.email, mapped under identities:, locally.

A request that has a pull request is approved by merging it instead.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra approvals approve production_deploy
  astra approve production_deploy --ttl 2h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.schedule = args[0]
			return a.runApprove(cmd.Context(), o)
		},
	}
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "commit the approval locally, do not push")
	cmd.Flags().StringVar(&o.ttl, "ttl", "", "how long the approval is valid (default the schedule's approval_ttl, 24h)")
	return cmd
}

// runApprove is `astra approve`.
func (a *app) runApprove(ctx context.Context, o approveOptions) error {
	cfg, s, err := a.loadSchedule(o.schedule)
	if err != nil {
		return err
	}
	d := s.ApprovalTTL.D()
	if o.ttl != "" {
		v, err := model.ParseDuration(o.ttl)
		if err != nil || v.D() <= 0 {
			return errkind.Usagef("--ttl %q: use a duration such as 30m, 2h or 1d", o.ttl)
		}
		d = v.D()
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbApprove, s.Name, o.by, o.run)
	if err != nil {
		return err
	}
	rep, tok, err := r.Approve(ctx, s, id, d)
	if err != nil {
		return a.finishRecord(rep, err)
	}
	if a.json() {
		return a.printJSON(tok)
	}
	what := "its next due run"
	if tok.IdempotencyKey != "" {
		what = "the run requested for " + tok.Slot.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(a.stdout, "approved %s of %s as %s until %s; recorded in the ledger and wrote %s\nthe next run-due executes it once\n",
		what, s.Name, id, tok.ExpiresAt.Format(time.RFC3339), approval.Path(s.ID))
	return a.finishRecord(rep, nil)
}

// rejectOptions are `astra approvals reject`'s flags and argument.
type rejectOptions struct {
	schedule string
	by       string
	reason   string
	run      runFlags
}

func (a *app) rejectCmd() *cobra.Command {
	var o rejectOptions
	cmd := &cobra.Command{
		Use:               "reject <schedule>",
		Short:             "Reject the pending approval request of a schedule (recorded; the slot never runs)",
		ValidArgsFunction: a.completeSchedules,
		Example:           `  astra approvals reject production_deploy --reason "freeze until Monday"`,
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.schedule = args[0]
			return a.runReject(cmd.Context(), o)
		},
	}
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "commit the rejection locally, do not push")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why (recorded)")
	return cmd
}

// runReject is `astra approvals reject`.
func (a *app) runReject(ctx context.Context, o rejectOptions) error {
	cfg, s, err := a.loadSchedule(o.schedule)
	if err != nil {
		return err
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbReject, s.Name, o.by, o.run)
	if err != nil {
		return err
	}
	rep, err := r.Reject(ctx, s, id, o.reason)
	if err == nil {
		fmt.Fprintf(a.stdout, "rejected the request of %s as %s; recorded in the ledger\n", s.Name, id)
	}
	return a.finishRecord(rep, err)
}
