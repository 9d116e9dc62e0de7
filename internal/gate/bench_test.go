package gate

import (
	"fmt"
	"testing"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

// BenchmarkAdmit is the global-budget admission a run passes as it starts,
// on a state holding a busy day: 10,000 completed runs and 500 open claims.
// It must stay negligible next to replay (about a second for a month).
func BenchmarkAdmit(b *testing.B) {
	p := policies()
	p.Budget = model.GlobalBudget{DailyLimit: 1_000 * money.Dollar, MonthlyLimit: 10_000 * money.Dollar, OnLimitReached: model.PauseAll}
	st := state.New(now)
	for i := range 10_000 {
		st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "o", IdempotencyKey: fmt.Sprintf("o@%d", i), TS: now, Usage: ledger.Usage{Cost: 1_000}})
	}
	for i := range 500 {
		st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "c", IdempotencyKey: fmt.Sprintf("c@%d", i), TS: now, Tier: 1, Limit: money.Dollar / 2})
	}
	in := Input{Schedule: sched("write", "admin", func(s *model.Schedule) { s.Tenant = "demo"; s.Budget.MaxCost = money.Dollar / 2 }),
		Policies: p, State: st, Now: now}
	for b.Loop() {
		if _, refused := Admit(in); refused {
			b.Fatal("refused")
		}
	}
}
