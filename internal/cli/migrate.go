package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/report"
)

// ledgerMigrateOptions are `astra ledger migrate`'s flags.
type ledgerMigrateOptions struct {
	to   string // --to-branch
	from string // --from; "": ledger_branch, else the checked-out branch
	by   string
}

func (a *app) ledgerMigrateCmd() *cobra.Command {
	var o ledgerMigrateOptions
	cmd := &cobra.Command{
		Use:   "migrate --to-branch <branch>",
		Short: "Move the ledger, with all its history, to another branch of the remote (a protected main), or back",
		Long: `migrate moves the ledger (var/schedules, the approval log, agent memory)
from the branch it lives on to another branch of the remote, with its whole
history: run history, checkpoints, budgets, pending approvals. It records
the move once, as a ledger.migrated event (from, to, and the commit it was
taken from), and never touches your checkout.

The branch it leaves gets the same event, so a run still pointed there
refuses to record (it says where the ledger went). A branch that refuses
astra's pushes (a protected main) keeps the ledger as it was, frozen.
Moving back works the same way: --to-branch main.

The ledger is taken from ledger_branch, or from the checked-out branch when
ledger_branch is unset or names the target (--from says otherwise). After
the move, point ledger_branch at the new branch (or remove it when the
ledger is back on the branch you check out).

It needs the migrate permission (default: whoever may approve), and the
event names who moved it.`,
		Example: `  astra ledger migrate --to-branch astra-state   # main is protected: the ledger gets a branch of its own
  astra ledger migrate --to-branch main          # back, once astra may push to main again`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runLedgerMigrate(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.to, "to-branch", "", "the branch the ledger moves to (created when the remote does not have it)")
	cmd.Flags().StringVar(&o.from, "from", "", "the branch the ledger is on now (default: ledger_branch, else the checked-out branch)")
	byFlag(cmd, &o.by)
	_ = cmd.MarkFlagRequired("to-branch")
	return cmd
}

// runLedgerMigrate is `astra ledger migrate`.
func (a *app) runLedgerMigrate(ctx context.Context, o ledgerMigrateOptions) error {
	clock, err := a.ledgerClock()
	if err != nil {
		return err
	}
	repo, err := gitops.Open(a.gitOptions(o.to))
	switch {
	case err != nil: // not a repository, an invalid branch name, ...
		return errkind.Usagef("%w", err)
	case !repo.HasRemote():
		return errkind.Usagef("the ledger moves between branches of the remote %q, which this repository does not have", a.v.GetString("git.remote"))
	}
	checkedOut := ""
	if c, err := gitops.Open(a.gitOptions("")); err == nil {
		checkedOut = c.Branch()
	}
	setting := a.v.GetString("ledger_branch")
	if o.from == "" {
		if o.from, err = ledgerops.SourceBranch(setting, checkedOut, o.to); err != nil {
			return err
		}
	}
	by, err := a.migrator(ctx, o)
	if err != nil {
		return err
	}
	stop := a.busy(fmt.Sprintf("moving the ledger from %s to %s", o.from, o.to))
	m, err := ledgerops.Migrate(ctx, repo, ledgerops.MigrateOptions{From: o.from, To: o.to, Clock: clock, Seals: a.ledgerSeals(), By: by,
		SegmentSize: a.v.GetInt64("ledger.segment_size"), RunnerID: a.runnerID()})
	stop()
	if err != nil {
		return err
	}
	if a.json() {
		return a.printJSON(m)
	}
	a.printMigration(m, checkedOut, setting)
	return nil
}

// printMigration says what moved, what became of the branch it left, and
// what to set next.
func (a *app) printMigration(m *ledgerops.Migration, checkedOut, setting string) {
	w := a.stdout
	if m.Already {
		fmt.Fprintf(w, "the ledger is on %s already (commit %s, %d events): nothing to do\n", m.To, report.Short(m.Commit), m.Events)
	} else {
		fmt.Fprintf(w, "moved the ledger from %s (commit %s) to %s (commit %s): %d events, the last one ledger.migrated (seq %d)\n",
			m.From, report.Short(m.Source), m.To, report.Short(m.Commit), m.Events, m.Seq)
		switch m.Left {
		case ledgerops.LeftRetired:
			fmt.Fprintf(w, "%s ends with the same ledger.migrated event: a run still pointed at it refuses to record there\n", m.From)
		case ledgerops.LeftFrozen:
			fmt.Fprintf(w, "%s refuses astra's pushes (protected), so it keeps the ledger as of %s, frozen; astra no longer reads it there\n",
				m.From, report.Short(m.Source))
		}
	}
	switch {
	case m.To == checkedOut && setting != "":
		fmt.Fprintf(w, "next: remove ledger_branch from .astra.yaml: the ledger is on the checked-out branch %s again; `git pull` brings it into this checkout\n", m.To)
	case m.To == checkedOut:
		fmt.Fprintf(w, "next: `git pull` brings the ledger into this checkout\n")
	case setting != m.To:
		fmt.Fprintf(w, "next: set `ledger_branch: %s` in .astra.yaml\n", m.To)
	}
}

// migrator is who moves the ledger, once the policies allow it (the
// migrate permission); a refusal is not recorded (see MayMigrate).
func (a *app) migrator(ctx context.Context, o ledgerMigrateOptions) (string, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return "", err
	}
	f := runFlags{}
	r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
	if err != nil {
		return "", err
	}
	target := "the ledger to " + o.to
	id, err := identity.Resolve(a.person(cfg, o.by, f))
	if err != nil {
		return "", errkind.New(errkind.ErrRefused, fmt.Errorf("moving %s: %w", target, err), "")
	}
	if err := r.MayMigrate(ctx, target, id); err != nil {
		return "", err
	}
	return id.Login, nil
}
