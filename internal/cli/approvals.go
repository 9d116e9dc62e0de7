package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/spf13/cobra"
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

func (a *app) approvalsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Show pending approval requests with pull request links and age",
		Example: `  astra approvals list
  astra approvals list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			st, err := a.replay()
			if err != nil {
				return err
			}
			type row struct {
				ScheduleID string    `json:"schedule_id"`
				Name       string    `json:"name"`
				Tier       int       `json:"tier"`
				Slot       time.Time `json:"slot,omitzero"`
				Status     string    `json:"status"`
				PR         int       `json:"pr,omitempty"`
				URL        string    `json:"url,omitempty"`
				Requested  time.Time `json:"requested_at,omitzero"`
				Expires    time.Time `json:"expires_at,omitzero"`
				Age        string    `json:"age,omitempty"`
				Why        string    `json:"why,omitempty"`
				Token      bool      `json:"token_file"`
			}
			var rows []row
			for _, s := range cfg.Schedules {
				_, terr := approval.Read(a.repo(), s.ID)
				hasToken := terr == nil
				req := st.Approvals[s.ID]
				if req == nil && !hasToken {
					continue
				}
				r := row{ScheduleID: s.ID, Name: s.Name, Tier: int(s.SafetyTier), Token: hasToken, Status: "token file present"}
				if tool := cfg.Policies.Tools[s.TargetTool]; tool != nil {
					r.Why = strings.Join(cfg.Policies.ApprovalReasons(s, tool), "; ")
				}
				if req != nil {
					r.Slot, r.Status, r.PR, r.Requested, r.Expires = req.Slot, req.Status, req.PR, req.RequestedAt, req.ExpiresAt
					r.Age = max(0, a.now().Sub(req.RequestedAt)).Round(time.Minute).String()
					r.URL = report.PullURL(serverURL(a.getenv), a.getenv("GITHUB_REPOSITORY"), req.PR)
				}
				rows = append(rows, r)
			}
			return printRows(a, rows, "no pending approvals", "SCHEDULE\tTIER\tSLOT\tSTATUS\tAGE\tEXPIRES\tPULL REQUEST\tWHY", func(r row) string {
				pr := r.URL
				if pr == "" && r.PR != 0 {
					pr = fmt.Sprintf("#%d", r.PR)
				}
				return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s", r.Name, r.Tier, fmtTime(r.Slot), r.Status, r.Age, fmtTime(r.Expires), pr, r.Why)
			})
		},
	}
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

func (a *app) approveCmd(use string) *cobra.Command {
	var by, ttl string
	var f runFlags
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
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			d := s.ApprovalTTL.D()
			if ttl != "" {
				v, err := model.ParseDuration(ttl)
				if err != nil || v.D() <= 0 {
					return errkind.Usagef("--ttl %q: use a duration such as 30m, 2h or 1d", ttl)
				}
				d = v.D()
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbApprove, s.Name, by, f)
			if err != nil {
				return err
			}
			rep, tok, err := r.Approve(cmd.Context(), s, id, d)
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
		},
	}
	byFlag(cmd, &by)
	cmd.Flags().BoolVar(&f.noPush, "no-push", false, "commit the approval locally, do not push")
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the approval is valid (default the schedule's approval_ttl, 24h)")
	return cmd
}

func (a *app) rejectCmd() *cobra.Command {
	var by, reason string
	var f runFlags
	cmd := &cobra.Command{
		Use:               "reject <schedule>",
		Short:             "Reject the pending approval request of a schedule (recorded; the slot never runs)",
		ValidArgsFunction: a.completeSchedules,
		Example:           `  astra approvals reject production_deploy --reason "freeze until Monday"`,
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbReject, s.Name, by, f)
			if err != nil {
				return err
			}
			rep, err := r.Reject(cmd.Context(), s, id, reason)
			if err == nil {
				fmt.Fprintf(a.stdout, "rejected the request of %s as %s; recorded in the ledger\n", s.Name, id)
			}
			return a.finishRecord(rep, err)
		},
	}
	byFlag(cmd, &by)
	cmd.Flags().BoolVar(&f.noPush, "no-push", false, "commit the rejection locally, do not push")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return cmd
}
