package state

import (
	"encoding/json"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// MigrationDetail is the Detail of a ledger.migrated event: the branches
// the ledger moved between, and the commit of From it was taken from.
type MigrationDetail struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Commit string `json:"commit"`
}

// Move is a ledger.migrated event as replay saw it.
type Move struct {
	MigrationDetail
	At        time.Time
	Seq       int64
	Cancelled bool // status failed: the move did not happen and the ledger stayed on From
}

func moveOf(e *ledger.Event) *Move {
	m := &Move{At: e.TS, Seq: e.Seq, Cancelled: e.Status != ledger.StatusOK}
	_ = json.Unmarshal(e.Detail, &m.MigrationDetail) // unreadable: a move to nowhere, which Home ignores
	return m
}

// Home is the branch the ledger lives on according to its newest
// ledger.migrated event, "" when it never moved. A ledger whose home is
// another branch than the one it was read from was left behind there:
// nothing may be appended to it.
func (s *State) Home() string {
	m := s.Moved
	switch {
	case m == nil:
		return ""
	case m.Cancelled:
		return m.From
	}
	return m.To
}
