// Package ledgerops keeps the ledger sound between runs: it verifies it
// (the hash chains, the heads astra's commits anchored, the snapshot),
// cuts a torn tail a killed run left (Repair), and moves it between
// branches of the remote (Migrate). These are the `astra ledger`
// commands; the runner calls Repair too, for `run-due --repair`. Git is
// reached through small interfaces (Sizer, History, Mover) that
// gitops.Repo satisfies.
package ledgerops

import (
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Paths are the files and directories astra appends to: the ledger, the
// approval log, agent memory and the state snapshot. A move takes them
// along; after a sync they must match the branch tip. Approval tokens are
// not among them: on a state branch they arrive on the default branch,
// through merged PRs.
var Paths = []string{ledger.Dir + "/", ledger.ApprovalLogDir + "/" + ledger.ApprovalLog, state.MemoryDir + "/", state.StateDir + "/"}

// Clock dates what ledgerops records: the machine's clock, or a test's
// fixed time (Test: --now with --test-clock), whose events say so.
type Clock struct {
	Now  func() time.Time // nil: time.Now
	Test bool
}

// now is the clock's time, in UTC.
func (c Clock) now() time.Time {
	if c.Now == nil {
		return time.Now().UTC()
	}
	return c.Now().UTC()
}

// journal records with this clock.
func (c Clock) journal(store *ledger.Store, st *state.State, tail ledger.Tail) *state.Journal {
	j := state.NewJournal(store, st, tail, c.now, false)
	if c.Test {
		j.MarkClock(ledger.ClockTest)
	}
	return j
}
