package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/approval"
	"github.com/astra-gitops/astra/internal/config"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/scaffold"
)

// initOptions are `astra init`'s flags.
type initOptions struct {
	scaffold scaffold.Options
	by       string
	keyFile  string // where the ledger key's private half goes
}

func (a *app) initCmd() *cobra.Command {
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Scaffold a working astra setup in this repository",
		Long: `init writes example schedules and policies that validate, a tool script,
the cron workflow (.github/workflows/astra.yml: every 5 minutes, a manual
dry-run switch, one run at a time, least-privilege permissions), a
validate-on-PR workflow, CODEOWNERS entries for everything that decides what
runs (schedules/, policies/, var/approvals/, scripts/tools/, .astra.yaml, the
workflows), and a .gitattributes line so 'git diff' shows ledger changes as
text. It validates what it is about to write before writing anything. It
never replaces a file that exists with other content unless --force, which
needs the init_force permission once policies exist; even then, a file you
changed is kept and astra's version is written beside it as <file>.new
(only files astra wrote and nobody changed, such as the workflows, are
replaced). CODEOWNERS and .gitattributes are appended to.

With --fan-out the cron workflow fans due work out instead: a plan job
claims what is due ('astra plan'), then each claimed task runs as a job of
its own ('astra run --claim'), on the runner its schedule or tool names
(runs_on), at most --max-parallel at once, one at a time per lane. Each job
is billed on its own (rounded up to the minute, plus its start-up): worth it
for long or uneven tasks, not for many short ones.`,
		Example: `  astra init --owner @my-org/maintainers
  astra init --fan-out --force   # switch the cron workflow to fan-out
  astra init --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runInit(cmd.Context(), o) },
	}
	cmd.Flags().BoolVar(&o.scaffold.Force, "force", false, "replace astra's own files that differ; a file you changed is kept, astra's version written beside it as <file>.new")
	cmd.Flags().StringVar(&o.scaffold.Owner, "owner", "", "CODEOWNERS owner of everything that decides what runs, e.g. @my-org/maintainers")
	cmd.Flags().BoolVar(&o.scaffold.DryRun, "dry-run", false, "show what would be written")
	cmd.Flags().StringVar(&o.scaffold.Approver, "approver", "", "GitHub login (or @org/team) who may approve; adds the approval example (default: the login of a noreply git user.email)")
	cmd.Flags().BoolVar(&o.scaffold.FanOut, "fan-out", false, "write the fan-out cron workflow: a plan job, then one job per claimed task")
	cmd.Flags().StringVar(&o.keyFile, "key-file", "", "where to write the private half of the ledger key init generates, outside the repository (default $XDG_CONFIG_HOME/astra/keys/<owner>-<repo>-<fingerprint>.key)")
	byFlag(cmd, &o.by)
	return cmd
}

// runInit is `astra init`.
func (a *app) runInit(ctx context.Context, o initOptions) error {
	opts := o.scaffold
	if err := a.permitInitForce(ctx, opts, o.by); err != nil {
		return err
	}
	a.initApprover(ctx, &opts)
	opts.Check = a.checkInit
	key, note, err := a.initLedgerKey(o.keyFile, &opts)
	if err != nil {
		return err
	}
	res, err := scaffold.Init(a.repo(), opts)
	if key != nil && !opts.DryRun && (err != nil || len(res.Conflicts) > 0) {
		os.Remove(key.path) // its public half was not written
	}
	if err != nil {
		return errkind.Usage(err)
	}
	if err := a.reportInit(res, opts.DryRun); err != nil {
		return err
	}
	if opts.DryRun {
		if !a.json() {
			a.printSetup(a.stdout, key, true)
		}
		return nil
	}
	// The textconv driver lives in the clone's own config.
	if err := gitops.SetConfig(a.repo(), "diff.astra-ledger.textconv", "astra ledger cat"); err != nil && !a.json() {
		fmt.Fprintf(a.stdout, "note: not a git repository, so no ledger diff driver was configured (%v)\n", err)
	}
	cfg, diags, err := config.Load(a.repo())
	if err != nil {
		return err
	}
	if diags.Errors() > 0 {
		for _, d := range diags {
			fmt.Fprintln(a.stderr, d)
		}
		return errkind.Usagef("the setup does not validate; fix the errors above")
	}
	if !a.json() {
		a.printNext(len(cfg.Schedules), opts, len(res.Skipped) == 0, note)
		a.printSetup(a.stdout, key, false)
	}
	return nil
}

// initLedgerKey makes the ledger key (written at once unless this is a
// dry run) and lists its public half in opts.
func (a *app) initLedgerKey(keyFile string, opts *scaffold.Options) (*ledgerKey, string, error) {
	key, env, note, err := a.newLedgerKey(keyFile)
	if err != nil {
		return nil, "", err
	}
	opts.Environment = env
	if key == nil {
		return nil, note, nil
	}
	opts.LedgerKey = key.public.String()
	if !opts.DryRun {
		if err := key.write(); err != nil {
			return nil, "", err
		}
	}
	return key, note, nil
}

// initApprover defaults the approver to the login in git's user.email and
// lists their SSH key for signed approvals.
func (a *app) initApprover(ctx context.Context, opts *scaffold.Options) {
	email, _ := gitops.UserEmail(a.repo())
	if opts.Approver == "" {
		opts.Approver = scaffold.LoginFromEmail(email)
	}
	if opts.Approver != "" {
		opts.Email = email
		opts.SigningKey = a.approverPublicKey(ctx)
	}
}

// reportInit prints what init wrote and refuses when a file stood in the way.
func (a *app) reportInit(res scaffold.Result, dryRun bool) error {
	if a.json() {
		if err := a.printJSON(res); err != nil {
			return err
		}
	} else {
		a.printInit(res, dryRun)
	}
	if len(res.Conflicts) > 0 {
		return errkind.Usagef("%d file(s) exist with other content; nothing was written (rerun with --force: files astra wrote and nobody changed are replaced; a file you changed is kept, with astra's version beside it as <file>%s)", len(res.Conflicts), scaffold.NewSuffix)
	}
	return nil
}

// printNext says what to do after a successful init.
func (a *app) printNext(schedules int, opts scaffold.Options, allWritten bool, note string) {
	fmt.Fprintf(a.stdout, "\n%s validate. Next:\n  astra schedules next\n  astra run-due --dry-run\n  git add -A && git commit -m 'Add astra' && git push\n", count(schedules, "schedule"))
	if opts.Approver == "" && allWritten {
		fmt.Fprintln(a.stdout, "To add the approval example (an external tool that waits for a human), say who approves:\n  astra init --approver <your-github-login>")
	} else if opts.Approver != "" {
		fmt.Fprintf(a.stdout, "%s approves; try an approval with `astra run weekly_announcement`.\n", opts.Approver)
		if opts.SigningKey != "" {
			fmt.Fprintf(a.stdout, "`astra approve` signs with your SSH key (%s), listed for %s under signing_keys.\n", a.approverKey(""), opts.Approver)
		} else {
			fmt.Fprintln(a.stdout, "No SSH key found: to approve with `astra approve`, list your public key under signing_keys in policies/approvals.yaml.")
		}
		fmt.Fprintln(a.stdout, "Sign approval tokens too (recommended): openssl rand -hex 32 | gh secret set ASTRA_APPROVAL_SECRET")
	}
	fmt.Fprintln(a.stdout, "Approval pull requests opened with the default GITHUB_TOKEN do not trigger other workflows; see the README.")
	fmt.Fprintln(a.stdout, "In a public repository GitHub disables scheduled workflows after 60 days without a commit: astra's pushed ledger commits count, "+
		"but a repository whose schedules fire rarely (or whose ledger is on a state branch) needs another commit; run-due warns from 50 days.")
	if note != "" {
		fmt.Fprintln(a.stdout, note)
	}
}

// approverPublicKey is the public key `astra approve` would sign with
// here, "" when there is none.
func (a *app) approverPublicKey(ctx context.Context) string {
	s, err := approval.NewSigner(ctx, a.approverKey(""))
	if err != nil {
		return ""
	}
	defer s.Close()
	return s.PublicKey()
}

// printInit lists what init wrote, or would write.
func (a *app) printInit(res scaffold.Result, dryRun bool) {
	would := ""
	if dryRun {
		would = "would be "
	}
	for _, l := range []struct {
		what  string
		files []string
	}{{would + "created", res.Created}, {would + "replaced", res.Replaced}, {would + "appended to", res.Appended}, {"unchanged", res.Unchanged},
		{"exists, differs", res.Conflicts}, {"skipped", res.Skipped}} {
		for _, f := range l.files {
			fmt.Fprintf(a.stdout, "  %-22s %s\n", l.what, f)
		}
	}
	for _, f := range res.Kept {
		fmt.Fprintf(a.stdout, "  %-22s %s (yours; astra's version %s %s)\n", "kept", f, would+"written to", f+scaffold.NewSuffix)
	}
	if len(res.Kept) > 0 {
		fmt.Fprintf(a.stdout, "  (compare and merge by hand: diff %s %s)\n", res.Kept[0], res.Kept[0]+scaffold.NewSuffix)
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintln(a.stdout, "  (examples skipped: this repository has its own schedules or policies)")
	}
}

// checkInit validates the setup init is about to write (after), staged in
// a directory of its own: nothing is written when it has more errors than
// the configuration there is now, staged alike (before), so a repository
// with its own broken configuration still gets its workflows. The errors
// shown are those init's files add.
func (a *app) checkInit(before, after string) error {
	_, got, err := config.Load(after)
	if err != nil {
		return err
	}
	if got.Errors() == 0 {
		return nil
	}
	had := map[string]bool{}
	if _, was, err := config.Load(before); err == nil {
		if got.Errors() <= was.Errors() {
			return nil
		}
		for _, d := range was {
			had[d.String()] = true
		}
	}
	for _, d := range got {
		if d.Severity == diag.Error && !had[d.String()] {
			fmt.Fprintln(a.stderr, d)
		}
	}
	return errkind.Usagef("the setup init would write does not validate (%s); nothing was written", count(got.Errors(), "error"))
}

// permitInitForce checks that whoever replaces an existing setup with
// --force holds the init_force permission of the policies in place. A
// repository without a valid setup has no one to ask.
func (a *app) permitInitForce(ctx context.Context, opts scaffold.Options, by string) error {
	if !opts.Force {
		return nil
	}
	cfg, diags, err := config.Load(a.repo())
	if err != nil || diags.Errors() > 0 || len(cfg.Policies.Roles) == 0 {
		return nil
	}
	f := runFlags{dryRun: opts.DryRun}
	r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbInitForce, "this repository", by, f)
	if err != nil {
		return err
	}
	return r.Permit(ctx, model.VerbInitForce, "this repository", id, nil)
}
