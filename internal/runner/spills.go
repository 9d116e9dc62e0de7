package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
)

// A spill is a branch that anyone who can push could have made, so a run
// merges only what a lost outcome push can hold (spillKinds): never an
// approval, a resumed budget, a released dead letter or a schedule's
// definition. In a sealed ledger the events file must carry the ledger
// key's seal too. A spill that fails either is refused whole, recorded as
// spill.refused, and moved to astra/spill-refused/; merged spills go to
// astra/spill-merged/. Nothing is deleted.

// spillEventsFile and spillSealFile are a spill's events and their seal.
const (
	spillEventsFile = "events.ndjson"
	spillSealFile   = "events.ndjson.sig"
)

// spillKinds are the events that the outcome push of a run can hold: what
// executing tasks records after the claims went out.
var spillKinds = map[ledger.Kind]bool{
	ledger.RunClaimed: true, ledger.RunStarted: true, ledger.RunCompleted: true, ledger.RunFailed: true, ledger.RunSkipped: true,
	ledger.RunRetryScheduled: true, ledger.RunDeadLettered: true, ledger.RollbackCompleted: true, ledger.RollbackFailed: true,
	ledger.MemoryStored: true, ledger.NotifySent: true, ledger.BudgetWarning: true, ledger.BudgetExceeded: true, ledger.BudgetPaused: true,
	ledger.TrustRiskAccepted: true, ledger.SpillRefused: true, ledger.Tick: true,
}

// spillable is nil when every event of evs may go to a spill (a
// checkpoint is left out: the merging run writes its own).
func spillable(evs []*ledger.Event) error {
	for _, e := range evs {
		if !spillKinds[e.Event] && e.Event != ledger.LedgerCheckpoint {
			return fmt.Errorf("a spill holds only the outcomes of runs, and this push holds %s", e.Event)
		}
	}
	return nil
}

// spillManifest is what a spill's seal covers: each of its files but the
// seal, by path, with its sha256, in order. A spill's tool writes are
// sealed with its events: neither can be changed, added or taken out.
func spillManifest(files map[string][]byte) []byte {
	var b bytes.Buffer
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if p != spillSealFile {
			sum := sha256.Sum256(files[p])
			fmt.Fprintf(&b, "%x %s\n", sum, p)
		}
	}
	return b.Bytes()
}

// signSpill adds the seal of a spill's files, in a sealed ledger.
func (s *session) signSpill(name string, files map[string][]byte) error {
	if s.r.opts.SignSpill == nil {
		return nil
	}
	sig, err := s.r.opts.SignSpill(name, spillManifest(files))
	if err != nil {
		return err
	}
	files[spillSealFile] = sig
	return nil
}

// refuseSpill checks spill name before it is merged; a spill it refuses
// is recorded as spill.refused and kept for keepRefused.
func (s *session) refuseSpill(name string, files map[string][]byte) (bool, error) {
	why := s.spillProblem(name, files)
	if why == "" {
		return false, nil
	}
	ref := "astra/spill/" + name
	d, _ := json.Marshal(map[string]string{"ref": ref, "kept": gitops.SpillRefused[len("refs/heads/"):] + name})
	s.notMerged = append(s.notMerged, name)
	s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("spill %s was not merged: %s (kept as %s%s)", ref, why, gitops.SpillRefused[len("refs/heads/"):], name))
	return true, s.record(&ledger.Event{Event: ledger.SpillRefused, Status: ledger.StatusRefused, Error: why, Detail: d})
}

// spillProblem says why spill name may not be merged; "" when it may.
func (s *session) spillProblem(name string, files map[string][]byte) string {
	events := files[spillEventsFile]
	if verify := s.r.opts.VerifySpill; verify != nil {
		err := verify(name, spillManifest(files), files[spillSealFile])
		if err != nil && len(files) == 2 && files[spillEventsFile] != nil && files[spillSealFile] != nil &&
			verify(name, events, files[spillSealFile]) == nil {
			// An earlier astra sealed a spill's events alone; one that holds
			// nothing else is as sound under that seal.
			err = nil
		}
		if err != nil {
			return "its files carry no valid seal of the ledger key: " + err.Error()
		}
	}
	for _, line := range bytes.Split(bytes.TrimSpace(events), []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var e ledger.Event
		if err := ledger.Unmarshal(line, &e); err != nil {
			return "a line is not an event: " + err.Error()
		}
		if !spillKinds[e.Event] {
			return fmt.Sprintf("it holds %s, which no lost outcome push makes", e.Event)
		}
	}
	return ""
}

// keepRefused moves the spills this run refused out of the way, once the
// refusal is pushed.
func (s *session) keepRefused(ctx context.Context) {
	for _, name := range s.notMerged {
		if err := s.r.git.KeepSpill(ctx, name, gitops.SpillRefused); err != nil {
			s.report.Errors = append(s.report.Errors, fmt.Sprintf("moving refused spill %s to %s: %v", name, gitops.SpillRefused, err))
		}
	}
	s.notMerged = nil
}
