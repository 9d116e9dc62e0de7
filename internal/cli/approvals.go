package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/runner"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/ui"
)

func (a *app) approvalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, approve and reject approval requests",
		Example: `  astra approvals list
  astra approvals approve deploy_site
  astra approvals reject deploy_site --by octocat --reason "not this week"`,
		Long: `Runs that need a human (tier 2, task policy auto_execute: false, tools with
requires_approval, autonomy L0/L1) wait for an approval. In CI each request
is a pull request: merge it to approve one run, close it to reject. Without
one, 'approve' signs an approval of one run with your SSH key (listed for
you under signing_keys in policies) and publishes it, and 'reject' records
the rejection in the ledger.`,
	}
	cmd.AddCommand(a.approvalsListCmd(), a.approveCmd("approve"), a.rejectCmd())
	return cmd
}

// approvalsListOptions are `astra approvals list`'s: it has no flags of
// its own.
type approvalsListOptions struct{}

func (a *app) approvalsListCmd() *cobra.Command {
	var o approvalsListOptions
	return a.limitFlag(&cobra.Command{
		Use:   "list",
		Short: "Show pending approval requests with pull request links and age",
		Example: `  astra approvals list
  astra approvals list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runApprovalsList(cmd.Context(), o) },
	})
}

// runApprovalsList is `astra approvals list`.
func (a *app) runApprovalsList(ctx context.Context, _ approvalsListOptions) error {
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
	keys, since := map[string]bool{}, a.now()
	for _, r := range rows {
		if r.Key != "" && r.Requested.Before(since) {
			since = r.Requested
		}
		if r.Key != "" {
			keys[r.Key] = true
		}
	}
	drafts, err := introspect.Drafts(a.store(), since, keys)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Draft = ui.Clean(drafts[rows[i].Key]) // in --json too: it is the tool's text, shown
	}
	a.readReviews(ctx, cfg, st, rows)
	return printRows(a, rows, "no pending approvals", "SCHEDULE\tTIER\tSLOT\tSTATUS\tAGE\tEXPIRES\tPULL REQUEST\tWHY\tDRAFT", func(r introspect.Approval) string {
		pr := r.URL
		if pr == "" && r.PR != 0 {
			pr = fmt.Sprintf("#%d", r.PR)
		}
		status := r.Status
		if p := r.Progress(); p != "" {
			status += " " + p
			var who []string
			if len(r.Approvers) > 0 {
				who = append(who, strings.Join(r.Approvers, ", "))
			}
			if len(r.Reviewers) > 0 {
				who = append(who, "reviewed: "+strings.Join(r.Reviewers, ", "))
			}
			if len(who) > 0 {
				status += " (" + strings.Join(who, "; ") + ")"
			}
		} else if r.By != "" {
			status += " by " + r.By
		}
		if r.Comment != "" {
			status += ": " + oneLine(r.Comment)
		}
		draft := oneLine(r.Draft)
		if !a.verbose() {
			draft = truncate(draft, 60)
		}
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.Name, r.Tier, fmtTime(r.Slot), status, r.Age, fmtTime(r.Expires), pr, r.Why, cmp.Or(draft, "-"))
	})
}

// readReviews adds to each row whose approval needs several approvers and
// waits on a pull request the role's approving reviews GitHub shows now.
// GitHub not answering (or not configured right) is a warning: the list
// shows what the ledger holds.
func (a *app) readReviews(ctx context.Context, cfg *model.Config, st *state.State, rows []introspect.Approval) {
	var r *runner.Runner
	for i := range rows {
		if rows[i].Required < 2 || rows[i].PR == 0 {
			continue
		}
		if r == nil {
			fc, err := a.forgeClient()
			if err != nil {
				fmt.Fprintf(a.stderr, "warning: the reviews of approval pull requests are left out: %s\n", a.redactor().String(err.Error()))
				return
			}
			if fc == nil {
				return
			}
			r = runner.New(cfg, runner.Options{Clock: a.now}, nil, nil, fc)
		}
		rv, err := r.PendingReviews(ctx, rows[i].ScheduleID, st)
		if err != nil {
			fmt.Fprintf(a.stderr, "warning: %s: the reviews are left out: %s\n", rows[i].Name, a.redactor().String(err.Error()))
			continue
		}
		rows[i].Reviewers = rv.Approvers
	}
}

// oneLine puts text on one line of a table: its lines joined with " / ",
// its tabs made spaces.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " / ", "\n", " / ", "\t", " ").Replace(strings.TrimSpace(s))
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
	key      string
	ttl      string
	reason   string
	run      runFlags
}

func (a *app) approveCmd(use string) *cobra.Command {
	var o approveOptions
	cmd := &cobra.Command{
		Use:   use + " <schedule>",
		Short: "Approve one run of a schedule: a token signed with your SSH key",
		Long: `approve signs an approval of one run with your SSH key (the real
ssh-keygen -Y sign, namespace astra-approval@astra) and publishes it: the
token var/approvals/pending/<schedule_id>.token goes to the branch astra
commits to on the remote, as a commit of astra's own that holds that file
only (your checkout and your branch are left alone, so nothing else of
yours is published). The next run-due verifies it and runs that run once.

The run approved is the schedule's open request or, when nothing is
pending, its next slot (the command says which); a schedule that never
needs an approval has nothing to approve (run it with 'astra run'). The
token binds the run's action: the tool entry, the files it runs (by git
blob id), the payload, the actor and astra's version. If any of it
changes before the run, the approval is refused.

The key says who approves: policies list each approver's public keys
under signing_keys, and that login must hold the approve permission for
the schedule (its task policy's approver_role, else permissions.approve).
The key is --key FILE, else git config user.signingkey when gpg.format is
ssh, else ~/.ssh/id_ed25519; a .pub file (or literal key) signs through
ssh-agent. A token nobody signed approves nothing, whoever it names.

--no-push writes the signed token into the checkout only; publish it by
committing and pushing that file (or through a pull request). --dry-run
shows the token that would be signed; only there may --by name the
approver. A request that has a pull request is approved by merging it.`,
		ValidArgsFunction: a.completeSchedules,
		Example: `  astra approve production_deploy
  astra approve production_deploy --key ~/.ssh/id_ed25519 --ttl 2h
  astra approve production_deploy --no-push && git add var/approvals/pending && git commit -m approve && git push
  astra approve production_deploy --dry-run --by octocat`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.schedule = args[0]
			return a.runApprove(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.by, "by", "", "with --dry-run: who would approve (otherwise your signing key says who)")
	cmd.Flags().StringVar(&o.key, "key", "", "the SSH key to sign with (default: git config user.signingkey with gpg.format ssh, else ~/.ssh/id_ed25519)")
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "write the signed token into the checkout only; publish it yourself")
	cmd.Flags().BoolVar(&o.run.dryRun, "dry-run", false, "show the token that would be signed; sign and write nothing")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why you approve (signed with the approval and recorded with it)")
	cmd.Flags().StringVar(&o.ttl, "ttl", "", "how long the approval is valid (default the schedule's approval_ttl, 24h; for a slot to come, from that slot)")
	return cmd
}

// runApprove is `astra approve`.
func (a *app) runApprove(ctx context.Context, o approveOptions) error {
	cfg, s, err := a.loadSchedule(o.schedule)
	if err != nil {
		return err
	}
	var ttl time.Duration
	if o.ttl != "" {
		v, err := model.ParseDuration(o.ttl)
		if err != nil || v.D() <= 0 {
			return errkind.Usagef("--ttl %q: use a duration such as 30m, 2h or 1d", o.ttl)
		}
		ttl = v.D()
	}
	if o.by != "" && !o.run.dryRun {
		return errkind.Usagef("--by is for --dry-run only: astra approve signs with your SSH key, and the key says who approves")
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id := identity.Identity{Login: strings.TrimPrefix(o.by, "@"), Source: identity.SourceClaim}
	var signer *approval.Signer
	if o.by == "" {
		if signer, err = approval.NewSigner(ctx, a.approverKey(o.key)); err != nil {
			return err
		}
		defer signer.Close()
		login := approval.KeyOwner(cfg.Policies.SigningKeys, signer.Fingerprint())
		if login == "" {
			return r.Refuse(ctx, model.VerbApprove, s.Name, identity.Identity{Source: identity.SourceSignature},
				fmt.Sprintf("your key %s is not listed under signing_keys in policies: add `signing_keys: {<your GitHub login>: [\"%s\"]}` "+
					"through a pull request (code owners review it)", signer.Fingerprint(), signer.PublicKey()), s)
		}
		id = identity.SignatureIdentity(login)
	}
	if err := r.Permit(ctx, model.VerbApprove, s.Name, id, s); err != nil {
		return err
	}
	draft, err := r.DraftApproval(ctx, s, id.Login, ttl)
	if err != nil {
		return err
	}
	tok := draft.Token
	tok.Comment = o.reason
	if o.run.dryRun {
		if a.json() {
			return a.printJSON(tok)
		}
		fmt.Fprintf(a.stdout, "would approve %s as %s until %s: astra approve signs this token with the approver's SSH key and publishes it\n%s",
			draft.What, id, tok.ExpiresAt.UTC().Format(time.RFC3339), tok.Encode())
		return nil
	}
	if err := signer.Sign(ctx, tok); err != nil {
		return err
	}
	where := ""
	if !o.run.noPush {
		branch, commit, err := r.PublishApproval(ctx, tok)
		if err != nil {
			return err
		}
		if branch != "" {
			where = fmt.Sprintf("published to %s on the remote (commit %.12s)", branch, commit)
		}
	}
	if where == "" {
		if _, err := approval.Write(a.repo(), tok); err != nil {
			return errkind.Default(fmt.Errorf("writing %s: %w", approval.Path(s.ID), err), errkind.ErrInfra)
		}
		where = "wrote " + approval.Path(s.ID) + " here only: publish it by committing and pushing that file (a pull request works too; the signature, not who pushes, is what counts)"
		if !o.run.noPush {
			where = "wrote " + approval.Path(s.ID) + " (this checkout has no remote: runs here use it)"
		}
	}
	if a.json() {
		return a.printJSON(tok)
	}
	fmt.Fprintf(a.stdout, "approves %s, as %s (key %s) until %s\n%s\nthe next run-due checks it and runs it once\n",
		draft.What, id.Login, signer.Fingerprint(), tok.ExpiresAt.UTC().Format(time.RFC3339), where)
	return nil
}

// approverKey is the key astra approve signs with: --key, else git's SSH
// signing key, else ~/.ssh/id_ed25519.
func (a *app) approverKey(flag string) string {
	if flag != "" {
		return flag
	}
	if k := gitops.SigningKey(a.repo()); k != "" {
		return k
	}
	return filepath.Join(a.getenv("HOME"), ".ssh", "id_ed25519")
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
	cmd.Flags().StringVar(&o.reason, "reason", "", "why you reject (recorded with the rejection; may be left out)")
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
