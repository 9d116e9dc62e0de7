package state

import (
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// Home follows the newest ledger.migrated event; a cancelled move leaves
// the ledger where it was.
func TestHome(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	st := New(now)
	if st.Home() != "" {
		t.Fatalf("a ledger that never moved has home %q", st.Home())
	}
	moved := func(status, from, to string) *ledger.Event {
		return &ledger.Event{Event: ledger.LedgerMigrated, TS: now, Status: status,
			Detail: []byte(`{"from":"` + from + `","to":"` + to + `","commit":"abc"}`)}
	}
	for _, step := range []struct {
		ev   *ledger.Event
		home string
	}{
		{moved(ledger.StatusOK, "main", "astra-state"), "astra-state"},
		{moved(ledger.StatusOK, "astra-state", "main"), "main"},
		{moved(ledger.StatusFailed, "main", "astra-state"), "main"},
	} {
		st.Apply(step.ev)
		if st.Home() != step.home {
			t.Fatalf("after %s %s: home %q, want %q", step.ev.Status, step.ev.Detail, st.Home(), step.home)
		}
	}
	if st.Moved.Commit != "abc" || st.Moved.From != "main" {
		t.Fatalf("moved = %+v", st.Moved)
	}
}
