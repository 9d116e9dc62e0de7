package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/ui"
)

func (a *app) ledgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect, verify, repair, move and correct the clock of the ledger in var/schedules",
		Example: `  astra ledger verify
  astra ledger cat | jq 'select(.event == "run.failed")'
  astra ledger repair`,
	}
	cmd.AddCommand(a.ledgerVerifyCmd(), a.ledgerCatCmd(), a.ledgerRepairCmd(), a.ledgerMigrateCmd(), a.ledgerCorrectClockCmd())
	return cmd
}

func (a *app) store() *ledger.Store {
	return ledger.Open(a.repo(), a.v.GetInt64("ledger.segment_size")).Sealed(a.ledgerSeals())
}

// replay is the state at --now, for read commands; a ledger that cannot
// be read is a usage error (exit 2) that names the file and line.
func (a *app) replay() (*state.State, error) {
	st, _, err := state.Replay(a.store(), a.now())
	if err != nil {
		return nil, errkind.Usage(err)
	}
	return st, nil
}

// ledgerVerifyOptions are `astra ledger verify`'s: it has no flags of its
// own.
type ledgerVerifyOptions struct{}

func (a *app) ledgerVerifyCmd() *cobra.Command {
	var o ledgerVerifyOptions
	return &cobra.Command{
		Use:   "verify",
		Short: "Check gzip integrity, JSON, seq and the hash chain of every ledger file",
		Long: `verify reads every file of the ledger and the approval log and checks that
each gzip member is intact, each line is a valid event, seq increases by one
and each line's prev is the sha256 of the line before it, across files. In a
git checkout it also checks the heads that astra's commits anchored in their
messages (Ledger-Head trailers of the last 50 commits), so an edit of a last
line, which no hash chain can see, is found too. Then it checks that the
state snapshot (var/state/snapshot), which runs start from, equals a replay
of the ledger up to the line it is bound to. It names the first bad
file:line and exits 1; a clean ledger exits 0.`,
		Example: `  astra ledger verify
  astra ledger verify --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runLedgerVerify(cmd.Context(), o) },
	}
}

// runLedgerVerify is `astra ledger verify`.
func (a *app) runLedgerVerify(_ context.Context, _ ledgerVerifyOptions) error {
	stop := a.busy("verifying the ledger")
	v, err := ledgerops.Verify(a.repo(), a.v.GetInt64("ledger.segment_size"), a.ledgerGit(), a.ledgerSeals())
	stop()
	if err != nil {
		return err
	}
	if a.json() {
		if err := a.printJSON(v); err != nil {
			return err
		}
	} else {
		a.printVerification(v)
	}
	if v.Damaged() {
		return errkind.Failed()
	}
	return nil
}

// printVerification says what each check found; damage comes with what
// to do about it, and in GitHub Actions as an annotation on the file.
func (a *app) printVerification(v ledgerops.Verification) {
	for _, c := range v {
		switch {
		case c.Damaged():
			fmt.Fprintf(a.stdout, "%s\n  %s\n", c.Error, c.Hint)
			if a.inGitHubActions() {
				_ = ui.Annotate(a.stdout, ui.Annotation{Level: ui.Error, File: c.File, Line: c.Line, Message: c.Error})
			}
		case c.Log != state.SnapshotPath:
			fmt.Fprintf(a.stdout, "%s: %s in %s, chain intact\n", c.Log, count(int(c.Events), "event"), count(c.Files, "file"))
		case c.Note != "":
			fmt.Fprintf(a.stdout, "%s: not checked: %s\n", c.Log, c.Note)
		default:
			fmt.Fprintf(a.stdout, "%s: equals a replay of the ledger up to seq %d\n", c.Log, c.Events)
		}
	}
}

// ledgerCatOptions are `astra ledger cat`'s arguments.
type ledgerCatOptions struct {
	files []string // ledger files; none: the whole ledger
}

func (a *app) ledgerCatCmd() *cobra.Command {
	var o ledgerCatOptions
	return &cobra.Command{
		Use:   "cat [file...]",
		Short: "Print ledger files as NDJSON (all of them by default)",
		Long: `cat decompresses ledger files and prints their lines, one JSON event per
line, like zcat. Without arguments it prints the whole ledger in order. It is
also the textconv driver that makes 'git diff' show ledger changes as text:

  git config diff.astra-ledger.textconv "astra ledger cat"
  echo 'var/**/*.ndjson.gz diff=astra-ledger' >> .gitattributes`,
		Example: `  astra ledger cat | jq 'select(.event == "run.failed")'
  astra ledger cat var/schedules/2026-11.ndjson.gz`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.files = args
			return a.runLedgerCat(cmd.Context(), o)
		},
	}
}

// runLedgerCat is `astra ledger cat`.
func (a *app) runLedgerCat(_ context.Context, o ledgerCatOptions) error {
	if len(o.files) == 0 {
		segs, err := a.store().Segments()
		if err != nil {
			return errkind.Ledger(err, "")
		}
		for _, s := range segs {
			o.files = append(o.files, filepath.Join(a.repo(), filepath.FromSlash(s.Path)))
		}
	}
	return ledger.Cat(a.stdout, o.files...)
}

// ledgerRepairOptions are `astra ledger repair`'s: it has no flags of its
// own.
type ledgerRepairOptions struct{}

func (a *app) ledgerRepairCmd() *cobra.Command {
	var o ledgerRepairOptions
	return &cobra.Command{
		Use:   "repair",
		Short: "Cut a broken tail (a run killed while writing) off the ledger",
		Example: `  astra ledger verify     # names the broken file:line and says whether repair applies
  astra ledger repair`,
		Long: `repair cuts the last gzip member of the last ledger file when it does not
decompress, which is what a run killed while writing leaves behind. Complete
lines of that member that still chain are kept, and a ledger.repaired event
records what was cut. A ledger broken anywhere else is refused: that is not
a crash, and needs a human (restore the file from git).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runLedgerRepair(cmd.Context(), o) },
	}
}

// runLedgerRepair is `astra ledger repair`.
func (a *app) runLedgerRepair(_ context.Context, _ ledgerRepairOptions) error {
	clock, err := a.ledgerClock()
	if err != nil {
		return err
	}
	rep, err := ledgerops.Repair(a.repo(), a.v.GetInt64("ledger.segment_size"), clock, a.ledgerGit(), a.ledgerSeals())
	if err != nil {
		return err
	}
	if rep == nil {
		fmt.Fprintln(a.stdout, "the ledger is intact; nothing to repair")
		return nil
	}
	fmt.Fprintf(a.stdout, "cut %d bytes at offset %d of %s; kept %d complete lines; recorded ledger.repaired\n",
		rep.Dropped, rep.Offset, rep.File, rep.Salvaged)
	return nil
}

// ledgerGit is the repository holding the ledger, as verify and repair
// ask it; nil outside one (then there are no anchors, and nothing counts
// as committed). An interface, so that nil stays nil.
func (a *app) ledgerGit() interface {
	ledgerops.History
	ledgerops.Sizer
} {
	repo, err := gitops.Open(a.gitOptions(a.v.GetString("ledger_branch")))
	if err != nil {
		return nil
	}
	return repo
}
