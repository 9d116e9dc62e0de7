package cli

import (
	"fmt"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/gate"
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
				_, _, terr := approval.Read(a.repo(), s.ID)
				hasToken := terr == nil
				req := st.Approvals[s.ID]
				if req == nil && !hasToken {
					continue
				}
				r := row{ScheduleID: s.ID, Name: s.Name, Tier: int(s.SafetyTier), Token: hasToken, Status: "token file present"}
				if tool := cfg.Policies.Tools[s.TargetTool]; tool != nil {
					r.Why = strings.Join(gate.ApprovalReasons(s, tool, &cfg.Policies), "; ")
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

// whoami is the default approver name for local approvals.
func whoami(getenv func(string) string) string {
	for _, k := range []string{"GITHUB_ACTOR", "USER"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func (a *app) approveCmd(use string) *cobra.Command {
	var by string
	var ttl string
	cmd := &cobra.Command{
		Use:   use + " <schedule>",
		Short: "Approve the pending (or next) run of a schedule with a local token file",
		Long: `approve writes var/approvals/pending/<schedule_id>.token for the
schedule's open request, or, when none is open, for its next due run. The
token names the slot and the payload hash, expires after --ttl, is signed
when ASTRA_APPROVAL_SECRET is set, and is used once. When the task policy
names an approver role, --by must be one of its logins.

Commit the token file (or let run-due do it): the next run executes once.
In CI, approve by merging the approval pull request instead.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra approvals approve production_deploy --by alice
  astra approve production_deploy --by alice --ttl 2h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			if by == "" {
				by = whoami(a.getenv)
			}
			if by == "" {
				return usageErrorf("say who approves with --by")
			}
			if role := approverRoleOf(cfg, s); role != "" {
				if allowed := cfg.Policies.Approvers[role]; !slices.Contains(allowed, by) {
					return usageErrorf("%s may not approve %s: task policy requires role %s (%s)", by, s.Name, role, strings.Join(allowed, ", "))
				}
			}
			st, err := a.replay()
			if err != nil {
				return err
			}
			d := s.ApprovalTTL.D()
			if ttl != "" {
				v, err := model.ParseDuration(ttl)
				if err != nil || v.D() <= 0 {
					return usageErrorf("--ttl %q: use a duration such as 30m, 2h or 1d", ttl)
				}
				d = v.D()
			}
			now := a.now()
			tok := &approval.Token{ScheduleID: s.ID, ScheduleName: s.Name, ApprovedBy: by, ApprovedAt: now, ExpiresAt: now.Add(d),
				PayloadHash: approval.PayloadHash(s.Payload)}
			what := "its next due run"
			if req := st.Approvals[s.ID]; req != nil {
				tok.Slot, tok.IdempotencyKey = req.Slot, req.Key
				what = "the run requested for " + req.Slot.UTC().Format(time.RFC3339)
			}
			tok.Sign([]byte(a.getenv("ASTRA_APPROVAL_SECRET")))
			if _, err := approval.Write(a.repo(), tok); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(tok)
			}
			fmt.Fprintf(a.stdout, "approved %s of %s as %s until %s\nwrote %s; the next run-due executes it once\n",
				what, s.Name, by, tok.ExpiresAt.Format(time.RFC3339), approval.Path(s.ID))
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "who approves (default $GITHUB_ACTOR or $USER)")
	cmd.Flags().StringVar(&ttl, "ttl", "", "how long the approval is valid (default the schedule's approval_ttl, 24h)")
	return cmd
}

func approverRoleOf(cfg *model.Config, s *model.Schedule) string {
	if tp := cfg.Policies.TaskPolicy(s.TargetTool, s.Tenant); tp != nil {
		return tp.ApproverRole
	}
	return ""
}

func (a *app) rejectCmd() *cobra.Command {
	var by, reason string
	cmd := &cobra.Command{
		Use:               "reject <schedule>",
		Short:             "Reject the pending approval request of a schedule (recorded; the slot never runs)",
		ValidArgsFunction: a.completeSchedules,
		Example:           `  astra approvals reject production_deploy --by alice --reason "freeze until Monday"`,
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, s, err := a.loadSchedule(args[0])
			if err != nil {
				return err
			}
			if by == "" {
				by = whoami(a.getenv)
			}
			r, err := a.newRunner(cfg, runFlags{}, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			rep, err := r.Reject(cmd.Context(), s, by, reason)
			if err == nil {
				fmt.Fprintf(a.stdout, "rejected the request of %s; recorded in the ledger\n", s.Name)
			}
			return a.finishRecord(rep, err)
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "who rejects (default $GITHUB_ACTOR or $USER)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return cmd
}
