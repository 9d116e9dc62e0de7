package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Where the ledger lives. A run records only into the ledger of the branch
// astra commits to; when the settings and the repository disagree it stops
// (exit 2) and says what to do, rather than start a new ledger beside the
// real one or append to one that was left behind.

// pullState brings the state branch's ledger into the worktree before a
// run or a recorded decision reads it: with a state branch, the checkout's
// var/ is only a copy. Without pushing there is nothing to fetch from.
func (r *Runner) pullState(ctx context.Context) error {
	if r.git == nil || !r.opts.StateBranch || r.opts.DryRun || r.opts.NoPush {
		return nil
	}
	return r.pull(ctx)
}

// checkStateBranch refuses to start a new ledger on a state branch that
// has no commits while the checked-out branch holds a ledger: that ledger
// is moved there with `astra ledger migrate`, never silently abandoned.
// Called before anything is written to the worktree.
func (r *Runner) checkStateBranch() error {
	if r.git == nil || !r.opts.StateBranch {
		return nil
	}
	head, err := r.git.Head()
	if err != nil || head != "" {
		return errkind.Default(err, errkind.ErrInfra)
	}
	has, err := r.git.HeadHas(ledger.Dir)
	if err != nil || !has {
		return errkind.Default(err, errkind.ErrInfra)
	}
	b := r.git.Branch()
	hint := fmt.Sprintf("Move the ledger there with `astra ledger migrate --to-branch %s`: its history, budgets and approvals go with it, "+
		"recorded as ledger.migrated.", b)
	if r.opts.NoPush {
		hint += fmt.Sprintf(" If %s exists on the remote, fetch it first (`git fetch origin %s:%s`).", b, b, b)
	}
	return &errkind.Error{Kind: errkind.ErrUsage, Hint: hint, Err: fmt.Errorf("ledger_branch is %s, which has no commits, but the checked-out branch "+
		"holds a ledger in %s: astra will not start a new, empty ledger beside it", b, ledger.Dir)}
}

// checkLedgerBranch refuses to record into a ledger that moved away: its
// newest ledger.migrated event names another branch than the one astra
// commits to; then checkStateBranch. Without a git repository there is no branch to compare.
func (r *Runner) checkLedgerBranch(st *state.State) error {
	if r.git == nil {
		return nil
	}
	home, here := st.Home(), r.git.Branch()
	if home == "" || home == here {
		return r.checkStateBranch()
	}
	m := st.Moved
	return &errkind.Error{Kind: errkind.ErrUsage,
		Err: fmt.Errorf("the ledger on %s moved to branch %s at %s (ledger.migrated, seq %d): nothing more is recorded here",
			here, home, m.At.UTC().Format(time.RFC3339), m.Seq),
		Hint: fmt.Sprintf("Point astra at %s: `ledger_branch: %s` in .astra.yaml, or no ledger_branch at all if %s is the branch your checkout is of.",
			home, home, home)}
}

// checkLedgerFiles refuses to start a new ledger in a worktree that lacks
// the one its commit holds: a sparse checkout whose patterns leave out
// both the ledger's files and the snapshot (or files deleted by hand)
// reads as a repository with no ledger, and a run would record a new one
// over it. Called with the replayed tail, before anything is recorded.
func (r *Runner) checkLedgerFiles(tail ledger.Tail) error {
	if r.git == nil || r.opts.StateBranch || r.opts.DryRun || tail.Seq > 0 {
		return nil
	}
	has, err := r.git.HeadHas(state.SnapshotPath)
	if err != nil || !has {
		return errkind.Default(err, errkind.ErrInfra)
	}
	return &errkind.Error{Kind: errkind.ErrUsage,
		Err: fmt.Errorf("the checked-out commit holds a ledger (%s), but this worktree has none of its files under %s: "+
			"astra will not start a new ledger over it; nothing was recorded", state.SnapshotPath, ledger.Dir),
		Hint: "A sparse checkout must include var/ (`git sparse-checkout add /var/`), or restore the files with `git checkout -- var/`; " +
			"or run from a plain clone."}
}

// pushError classifies a failed push of the ledger: a branch protection
// refusal is the configuration's problem, with the fix named; anything
// else is infrastructure.
func (r *Runner) pushError(err error) error {
	if !errors.Is(err, gitops.ErrProtected) {
		return errkind.Infraf("pushing the ledger: %w", err)
	}
	b := r.git.Branch()
	hint := fmt.Sprintf("astra commits its ledger to %s, and the remote refuses its pushes there. Keep the ledger on a branch of its own: "+
		"set `ledger_branch: astra-state` in .astra.yaml (through a pull request into %s), then move the existing ledger there with "+
		"`astra ledger migrate --to-branch astra-state`; %s then never changes.", b, b, b)
	if r.opts.StateBranch {
		hint = fmt.Sprintf("%s is astra's own ledger branch: exclude it from branch protection and rulesets, so that astra's token may push to it.", b)
	}
	return &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("pushing the ledger: %w", err), Hint: hint}
}
