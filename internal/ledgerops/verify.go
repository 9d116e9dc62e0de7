package ledgerops

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// History is the git side of a verify (gitops.Repo): the messages of
// astra's commits, newest first, whose Ledger-Head trailers anchor the
// ledger.
type History interface {
	CommitMessagesUntil(stop func(gitops.CommitMessage) bool) ([]gitops.CommitMessage, error)
}

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
// member, line, seq and hash link (ledger.Verify), then the heads every
// commit anchored since the oldest month in the checkout began (so an
// edit of a last line, which no chain can see, or members dropped long
// ago, are found too), then the ledger's rules (state.Breach) over the
// whole of each month. Damage is a Check naming the first bad file:line
// with what to do, not an error. When both logs are intact it checks that
// the state snapshot, which runs start from, equals a replay of the
// ledger. git may be nil (no repository): then there are no anchors. The
// error is a log that could not be read at all. With seals (a sealed
// ledger's; nil: not sealed) every member from the first sealed one on
// must carry a valid seal.
func Verify(root string, segmentSize int64, git History, seals *ledger.Seals) (Verification, error) {
	main := ledger.Open(root, segmentSize).Sealed(seals)
	mainSegs, err := main.Segments()
	if err != nil {
		return nil, errkind.Ledger(err, "")
	}
	anchors := monthAnchors(git, main, mainSegs)
	var v Verification
	// The snapshot's replay and the rules are fed by the chain's check:
	// one pass.
	snapshot := state.NewSnapshotVerifier(main)
	rules := state.NewRuleChecker()
	for _, s := range []*ledger.Store{main, ledger.OpenApprovalLog(root)} {
		segs, err := s.Segments()
		if err != nil {
			return nil, errkind.Ledger(err, "")
		}
		var each func(*ledger.Event)
		if s == main {
			each = func(e *ledger.Event) {
				snapshot.Apply(e)
				rules.Apply(e)
			}
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
	if v.Damaged() { // the rules and the snapshot are checked against an intact ledger
		return v, nil
	}
	if b := rules.Breaches(); len(b) > 0 {
		what := make([]string, len(b))
		for i, x := range b {
			what[i] = x.String()
		}
		v = append(v, Check{Log: "rules", Events: int64(len(b)),
			Error: fmt.Sprintf("%d event(s) break the ledger's rules, which astra never does, and no ledger.tampered reports them: %s", len(b), strings.Join(what, "; ")),
			Hint:  "A run that records reports them as ledger.tampered and stops tier 2 until `astra trust resume`; find who wrote them with `git log -p -- " + main.Dir() + "`."})
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

// monthAnchors are the ledger heads the commits of astra's branch
// recorded, newest first, back to the first commit whose anchors are all
// of months before the oldest file in segs: what every file checked out
// was ever committed with. None without git, or when its history cannot
// be read (a repository without commits yet): the chains are still
// verified.
func monthAnchors(git History, main *ledger.Store, segs []ledger.Segment) []ledger.Anchor {
	if git == nil || len(segs) == 0 {
		return nil
	}
	oldest := segs[0].Month
	var out []ledger.Anchor
	msgs, err := git.CommitMessagesUntil(func(m gitops.CommitMessage) bool {
		older := false
		for _, an := range ledger.ParseAnchors(m.Message) {
			if month, ok := main.MonthOf(an.File); ok {
				if month >= oldest {
					return false
				}
				older = true
			}
		}
		return older
	})
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		for _, an := range ledger.ParseAnchors(m.Message) {
			if month, ok := main.MonthOf(an.File); ok && month < oldest {
				continue // a month no longer checked out
			}
			an.Commit = m.Commit
			out = append(out, an)
		}
	}
	return out
}
