package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/state"
)

func (a *app) ledgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect, verify and repair the ledger in var/schedules",
		Example: `  astra ledger verify
  astra ledger cat | jq 'select(.event == "run.failed")'
  astra ledger repair`,
	}
	cmd.AddCommand(a.ledgerVerifyCmd(), a.ledgerCatCmd(), a.ledgerRepairCmd(), a.ledgerMigrateCmd())
	return cmd
}

func (a *app) store() *ledger.Store {
	return ledger.Open(a.repo(), a.v.GetInt64("ledger.segment_size"))
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

func (a *app) ledgerVerifyCmd() *cobra.Command {
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			type result struct {
				Log    string `json:"log"`
				Files  int    `json:"files"`
				Events int64  `json:"events"`
				Last   string `json:"last_hash,omitempty"`
				Error  string `json:"error,omitempty"`
				File   string `json:"file,omitempty"`
				Line   int    `json:"line,omitempty"`
				Hint   string `json:"hint,omitempty"`
				Note   string `json:"note,omitempty"`
			}
			var results []result
			bad := false
			anchors := a.anchors()
			for _, s := range []*ledger.Store{a.store(), ledger.OpenApprovalLog(a.repo())} {
				segs, err := s.Segments()
				if err != nil {
					return err
				}
				name := s.Dir()
				st, err := ledger.Verify(a.repo(), segs)
				if err == nil {
					err = s.VerifyAnchors(segs, anchors)
				}
				res := result{Log: name, Files: st.Files, Events: st.Events, Last: st.Tail.Hash}
				var ce *ledger.CorruptError
				switch {
				case errors.As(err, &ce):
					bad = true
					res.Error, res.File, res.Line, res.Hint = ce.Error(), ce.File, ce.Line, ledgerops.RepairHint(ce)
				case err != nil:
					return err
				}
				results = append(results, res)
			}
			if !bad { // the snapshot is checked against an intact ledger
				res := result{Log: state.SnapshotPath}
				check, err := state.VerifySnapshot(a.store())
				res.Events, res.Note = check.Seq, check.Note
				if err != nil {
					bad = true
					res.Error, res.Hint = err.Error(), "Runs start from the snapshot, so fix it: delete "+state.SnapshotPath+" (the next run replays the month and writes it and "+state.DeadLettersPath+" anew) or restore both with `git checkout -- "+state.StateDir+"/`."
				}
				results = append(results, res)
			}
			if a.json() {
				if err := a.printJSON(results); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if r.Error != "" {
						fmt.Fprintf(a.stdout, "%s\n  %s\n", r.Error, r.Hint)
						if a.inGitHubActions() {
							fmt.Fprintf(a.stdout, "::error file=%s,line=%d::%s\n", r.File, r.Line, r.Error)
						}
						continue
					}
					switch {
					case r.Log != state.SnapshotPath:
						fmt.Fprintf(a.stdout, "%s: %s in %s, chain intact\n", r.Log, count(int(r.Events), "event"), count(r.Files, "file"))
					case r.Note != "":
						fmt.Fprintf(a.stdout, "%s: not checked: %s\n", r.Log, r.Note)
					default:
						fmt.Fprintf(a.stdout, "%s: equals a replay of the ledger up to seq %d\n", r.Log, r.Events)
					}
				}
			}
			if bad {
				return errkind.Failed()
			}
			return nil
		},
	}
}

func (a *app) ledgerCatCmd() *cobra.Command {
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
			files := args
			if len(files) == 0 {
				segs, err := a.store().Segments()
				if err != nil {
					return err
				}
				for _, s := range segs {
					files = append(files, filepath.Join(a.repo(), filepath.FromSlash(s.Path)))
				}
			}
			return ledger.Cat(a.stdout, files...)
		},
	}
}

func (a *app) ledgerRepairCmd() *cobra.Command {
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := ledgerops.Repair(a.repo(), a.v.GetInt64("ledger.segment_size"), a.clock, a.gitSizes())
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
		},
	}
}

// gitSizes asks git how much of a ledger file it holds; nil outside a
// repository (an interface, so that nil stays nil).
func (a *app) gitSizes() ledgerops.Sizer {
	repo, err := gitops.Open(gitops.Options{Dir: a.repo(), Remote: a.v.GetString("git.remote"), Branch: a.v.GetString("ledger_branch")})
	if err != nil {
		return nil
	}
	return repo
}

// anchors are the ledger heads astra's recent commits recorded; none
// outside a git checkout.
func (a *app) anchors() []ledger.Anchor {
	repo, err := gitops.Open(gitops.Options{Dir: a.repo(), Remote: a.v.GetString("git.remote"), Branch: a.v.GetString("ledger_branch")})
	if err != nil {
		return nil
	}
	msgs, err := repo.CommitMessages(50)
	if err != nil {
		return nil
	}
	var out []ledger.Anchor
	for _, m := range msgs {
		for _, an := range ledger.ParseAnchors(m.Message) {
			an.Commit = m.Commit
			out = append(out, an)
		}
	}
	return out
}
