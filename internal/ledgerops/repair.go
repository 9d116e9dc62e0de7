package ledgerops

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Sizer says how much of a ledger file git already holds (gitops.Repo):
// committed on astra's branch, and pushed to the remote. A repair never
// cuts those bytes.
type Sizer interface {
	CommittedFileSize(path string) (size int64, ok bool, err error)
	RemoteFileSize(path string) (size int64, ok bool, err error)
}

// Repair cuts a torn tail (a run killed while writing) off whichever log
// under root has one (the ledger, the approval log, agent memory; see
// ledger.Store.Repair) and records a ledger.repaired event saying what was
// cut. It returns nil when every log is intact, and refuses damage that is
// not a torn tail with how to restore the file from git. git may be nil
// (no repository): then nothing counts as committed. seals are a sealed
// ledger's (nil: not sealed): the ledger.repaired event is sealed too.
func Repair(root string, segmentSize int64, clock Clock, git Sizer, seals *ledger.Seals) (*ledger.Repaired, error) {
	main := ledger.Open(root, segmentSize).Sealed(seals)
	for _, store := range []*ledger.Store{main, ledger.OpenApprovalLog(root), ledger.OpenDir(root, state.MemoryDir, 0)} {
		segs, err := store.Segments()
		if err != nil {
			return nil, errkind.Ledger(err, "")
		}
		_, err = ledger.Verify(root, segs)
		var ce *ledger.CorruptError
		if !errors.As(err, &ce) {
			if err != nil {
				return nil, errkind.Default(err, errkind.ErrInfra)
			}
			continue
		}
		rep, err := store.Repair(segs, ce, held(git, ce.File))
		switch {
		case errors.Is(err, ledger.ErrNotRepairable):
			return nil, errkind.Ledger(err, "") // the message says how to restore it
		case err != nil:
			return nil, errkind.Ledger(err, RepairHint(ce))
		}
		st, tail, err := state.Replay(main, clock.now())
		if err != nil {
			return nil, errkind.Ledger(fmt.Errorf("still broken after repair: %w", err), "")
		}
		detail, _ := json.Marshal(rep)
		j := clock.journal(main, st, tail)
		if err := j.Record(&ledger.Event{Event: ledger.LedgerRepaired, Status: ledger.StatusOK, Detail: detail,
			Error: fmt.Sprintf("cut %d bytes at offset %d of %s, kept %d complete lines", rep.Dropped, rep.Offset, rep.File, rep.Salvaged)}); err != nil {
			return rep, errkind.Default(err, errkind.ErrInfra)
		}
		return rep, errkind.Default(j.SaveSnapshot(), errkind.ErrInfra) // it may follow a line that was cut
	}
	return nil, nil
}

// held is how much of the ledger file at path git holds. A size git
// cannot tell counts as none: Repair still refuses any cut that is not a
// torn tail.
func held(git Sizer, path string) ledger.RepairOptions {
	var o ledger.RepairOptions
	if git != nil {
		o.Committed, _, _ = git.CommittedFileSize(path)
		o.Pushed, _, _ = git.RemoteFileSize(path)
	}
	return o
}

// RepairHint tells the user what to do about a broken ledger: repair a
// torn tail, restore anything else from git.
func RepairHint(ce *ledger.CorruptError) string {
	if ce.Repairable() {
		return "The last write to the ledger was cut short (a run killed while writing). " +
			"Run `astra run-due --repair` (or `astra ledger repair`) to cut the broken tail; complete lines are kept and the repair is recorded."
	}
	return fmt.Sprintf("%s was changed or damaged after it was written; astra will not cut valid history: %s.", ce.File, ce.Restore())
}
