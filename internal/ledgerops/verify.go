package ledgerops

import (
	"errors"
	"slices"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// History is the git side of a verify (gitops.Repo): the messages of
// astra's recent commits, whose Ledger-Head trailers anchor the ledger.
type History interface {
	CommitMessages(limit int) ([]gitops.CommitMessage, error)
}

// anchorCommits is how many of astra's recent commits a verify reads
// anchors from.
const anchorCommits = 50

// Check is what a verify found in one log, or in the snapshot.
type Check struct {
	Log    string `json:"log"` // the log's directory or file, or state.SnapshotPath
	Files  int    `json:"files"`
	Events int64  `json:"events"` // the snapshot: the seq it is bound to
	Last   string `json:"last_hash,omitempty"`
	Error  string `json:"error,omitempty"` // the damage; "" when intact
	File   string `json:"file,omitempty"`  // where the damage is
	Line   int    `json:"line,omitempty"`
	Hint   string `json:"hint,omitempty"` // what to do about it
	Note   string `json:"note,omitempty"` // the snapshot: why it was not compared
}

// Damaged reports whether the check found damage.
func (c Check) Damaged() bool { return c.Error != "" }

// Verification is a verify's checks: the ledger, the approval log, and
// the snapshot when both logs are intact.
type Verification []Check

// Damaged reports whether any check found damage.
func (v Verification) Damaged() bool { return slices.ContainsFunc(v, Check.Damaged) }

// Verify checks the ledger and the approval log under root: every gzip
// member, line, seq and hash link (ledger.Verify), then the heads astra's
// recent commits anchored (so an edit of a last line, which no chain can
// see, is found too). Damage is a Check naming the first bad file:line
// with what to do, not an error. When both logs are intact it checks that
// the state snapshot, which runs start from, equals a replay of the
// ledger. git may be nil (no repository): then there are no anchors. The
// error is a log that could not be read at all. With seals (a sealed
// ledger's; nil: not sealed) every member from the first sealed one on
// must carry a valid seal.
func Verify(root string, segmentSize int64, git History, seals *ledger.Seals) (Verification, error) {
	main := ledger.Open(root, segmentSize).Sealed(seals)
	anchors := recentAnchors(git)
	var v Verification
	// The snapshot's replay is fed by the chain's check: one pass.
	snapshot := state.NewSnapshotVerifier(main)
	for _, s := range []*ledger.Store{main, ledger.OpenApprovalLog(root)} {
		segs, err := s.Segments()
		if err != nil {
			return nil, errkind.Ledger(err, "")
		}
		var each func(*ledger.Event)
		if s == main {
			each = snapshot.Apply
		}
		st, err := ledger.VerifyEach(root, segs, each, seals)
		if err == nil {
			err = s.VerifyAnchors(segs, anchors)
		}
		c := Check{Log: s.Dir(), Files: st.Files, Events: st.Events, Last: st.Tail.Hash}
		var ce *ledger.CorruptError
		switch {
		case errors.As(err, &ce):
			c.Error, c.File, c.Line, c.Hint = ce.Error(), ce.File, ce.Line, RepairHint(ce)
		case err != nil:
			return nil, errkind.Ledger(err, "")
		}
		v = append(v, c)
	}
	if v.Damaged() { // the snapshot is checked against an intact ledger
		return v, nil
	}
	sc, err := snapshot.Finish()
	c := Check{Log: state.SnapshotPath, Events: sc.Seq, Note: sc.Note}
	if sc.Unsealed != "" {
		c.Note = "runs do not use it, its seal does not hold (" + sc.Unsealed + "): a run that records puts back the newest sealed commit's"
	}
	if err != nil {
		c.Error, c.Hint = err.Error(), "Runs start from the snapshot, so fix it: delete "+state.SnapshotPath+
			" (the next run replays the month and writes it and "+state.DeadLettersPath+" anew) or restore both with `git checkout -- "+state.StateDir+"/`."
	}
	return append(v, c), nil
}

// recentAnchors are the ledger heads astra's recent commits recorded.
// None without git, or when its history cannot be read (a repository
// without commits yet): the chains are still verified.
func recentAnchors(git History) []ledger.Anchor {
	if git == nil {
		return nil
	}
	msgs, err := git.CommitMessages(anchorCommits)
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
