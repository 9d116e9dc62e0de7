package introspect

import (
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

func TestStatusLastTick(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	cfg := &model.Config{}
	st := state.New(now)
	if s := StatusOf(cfg, st); s.LastTick != nil || s.Stale || s.TickAgo != "" {
		t.Fatalf("no tick recorded: %+v", s)
	}
	st.Apply(&ledger.Event{Event: ledger.Tick, TS: now.Add(-2 * time.Hour), Status: ledger.StatusOK, Detail: []byte(`{"ran":1}`)})
	st.Apply(&ledger.Event{Event: ledger.Tick, TS: now.Add(-12 * time.Minute), Status: ledger.StatusFailed, Runner: "ci-1", Detail: []byte(`{"ran":2,"failed":1}`)})
	st.Apply(&ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: "s", IdempotencyKey: "s@1", TS: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)})
	st.Apply(&ledger.Event{Event: ledger.RunDeadLettered, ScheduleID: "d", IdempotencyKey: "d@1", TS: now.Add(-time.Hour)})
	st.Apply(&ledger.Event{Event: ledger.ApprovalApproved, Status: ledger.StatusPartial, ScheduleID: "p", IdempotencyKey: "p@1", By: "octocat",
		TS: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), Detail: []byte(`{"via":"signature","required":2}`)})
	s := StatusOf(cfg, st)
	if s.LastTick == nil || s.LastTick.Status != ledger.StatusFailed || s.LastTick.Ran != 2 || s.LastTick.Failed != 1 || s.LastTick.Runner != "ci-1" ||
		s.TickAgo != "12 minutes ago" || s.Stale || s.Approvals != 2 || s.DeadLetters != 1 {
		t.Fatalf("%+v %+v", s, s.LastTick)
	}
	st.Now = now.Add(2 * time.Hour)
	if s := StatusOf(cfg, st); !s.Stale || s.TickAgo != "2 hours ago" {
		t.Fatalf("two hours without a tick: %+v", s)
	}
}

func TestAgo(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Second: "just now", time.Minute: "1 minute ago", 119 * time.Minute: "119 minutes ago",
		3 * time.Hour: "3 hours ago", 72 * time.Hour: "3 days ago", -time.Minute: "in the future (-1m0s)",
	} {
		if got := Ago(d); got != want {
			t.Errorf("Ago(%s) = %q, want %q", d, got, want)
		}
	}
}
