package introspect

import (
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Status is `astra status`: what a person on call asks first, from the
// replayed state alone (the snapshot and the events after it).
type Status struct {
	Now      time.Time   `json:"now"`
	LastTick *state.Tick `json:"last_tick,omitempty"` // nil: run-due never recorded one
	// TickAgo is how long before Now the last tick was recorded, in
	// words ("12 minutes ago").
	TickAgo string `json:"last_tick_ago,omitempty"`
	// Stale: no tick for longer than an idle tick is recorded
	// (state.TickEvery) and a margin: the cron may have stopped.
	Stale       bool   `json:"stale"`
	Approvals   int    `json:"approvals_pending"`
	DeadLetters int    `json:"dead_letters"`
	Paused      string `json:"paused,omitempty"` // the global budget's pause, "" when none
	// Stopped is the emergency stop in force (astra pause --all), nil when none.
	Stopped *state.Stop `json:"stopped,omitempty"`
}

// staleMargin is how late an idle tick may be recorded before the cron is
// called stopped: a scheduled GitHub Actions run can start many minutes late.
const staleMargin = 30 * time.Minute

// StatusOf is the status at st.Now.
func StatusOf(cfg *model.Config, st *state.State) Status {
	s := Status{Now: st.Now, LastTick: st.LastTick, DeadLetters: len(st.DeadLetters), Paused: BudgetReport(cfg, st).Global.Paused(),
		Stopped: st.Stopped}
	for _, a := range st.Approvals {
		// partial: some of the approvers it needs signed ahead of the
		// slot; it waits for the others.
		if a.Status == ledger.StatusPending || a.Status == ledger.StatusPartial {
			s.Approvals++
		}
	}
	if t := st.LastTick; t != nil {
		s.TickAgo = Ago(st.Now.Sub(t.At))
		s.Stale = st.Now.Sub(t.At) > state.TickEvery+staleMargin
	}
	return s
}

// Ago says how long ago d was, in the largest whole unit that fits.
func Ago(d time.Duration) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, name)
	}
	switch {
	case d < 0:
		return "in the future (" + d.Round(time.Second).String() + ")"
	case d < time.Minute:
		return "just now"
	case d < 2*time.Hour:
		return unit(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int64(d/time.Hour), "hour")
	}
	return unit(int64(d/(24*time.Hour)), "day")
}
