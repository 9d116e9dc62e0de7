// Package ledgerops keeps the ledger sound between runs: it verifies it
// (the hash chains, the heads astra's commits anchored, the snapshot),
// cuts a torn tail a killed run left (Repair), and moves it between
// branches of the remote (Migrate). These are the `astra ledger`
// commands; the runner calls Repair too, for `run-due --repair`. Git is
// reached through small interfaces (Sizer, History, Mover) that
// gitops.Repo satisfies.
package ledgerops

import (
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// Paths are the files and directories astra appends to: the ledger, the
// approval log, agent memory and the state snapshot. A move takes them
// along; after a sync they must match the branch tip. Approval tokens are
// not among them: on a state branch they arrive on the default branch,
// through merged PRs.
var Paths = []string{ledger.Dir + "/", ledger.ApprovalLogDir + "/" + ledger.ApprovalLog, state.MemoryDir + "/", state.StateDir + "/"}
