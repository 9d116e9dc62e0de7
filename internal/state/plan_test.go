package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// claimAB claims a@1 for a plan's job and b@1 for run-due at at.
func claimAB(s *State, at time.Time) {
	detail, _ := json.Marshal(PlanDetail{Approved: true, Event: json.RawMessage(`{"x":1}`), Started: at})
	s.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "a", IdempotencyKey: "a@1", Mode: ledger.ModeScheduled, TS: at,
		ExpiresAt: at.Add(time.Hour), Runner: "plan", Reason: ledger.ReasonFanOut, Detail: detail})
	s.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "b", IdempotencyKey: "b@1", TS: at, ExpiresAt: at.Add(time.Hour), Runner: "due"})
}

// startAB records run.started of both claims at start.
func startAB(s *State, start time.Time) {
	for _, key := range []string{"a@1", "b@1"} {
		s.Apply(&ledger.Event{Event: ledger.RunStarted, IdempotencyKey: key, TS: start, ExpiresAt: start.Add(20 * time.Minute), Runner: "job"})
	}
}

// A fan-out claim carries its plan detail; run.started hands it to a job
// with a deadline from the job's start. run.started of a claim that is
// not a plan's changes nothing.
func TestPlannedClaims(t *testing.T) {
	at := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	s := New(at)
	claimAB(s, at)
	o := s.Open["a@1"]
	if o.Plan == nil || !o.Plan.Approved || string(o.Plan.Event) != `{"x":1}` || !o.Plan.Started.IsZero() {
		t.Fatalf("planned claim: %+v %+v", o, o.Plan)
	}
	if s.Open["b@1"].Plan != nil {
		t.Fatal("a run-due claim is not a plan's")
	}
	start := at.Add(30 * time.Minute)
	startAB(s, start)
	if o := s.Open["a@1"]; !o.Plan.Started.Equal(start) || o.Runner != "job" || !o.Deadline.Equal(start.Add(20*time.Minute)) {
		t.Fatalf("taken claim: %+v %+v", o, o.Plan)
	}
	if o := s.Open["b@1"]; o.Runner != "due" || !o.Deadline.Equal(at.Add(time.Hour)) {
		t.Fatalf("run.started moved a run-due claim: %+v", o)
	}
}

// A month's checkpoint carries a planned claim and its job's start.
func TestPlannedClaimsInACheckpoint(t *testing.T) {
	at := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	start := at.Add(30 * time.Minute)
	s := New(at)
	claimAB(s, at)
	startAB(s, start)
	next := New(at.Add(2 * time.Hour)) // December: replay starts from the checkpoint
	for _, e := range s.Checkpoint(at.Add(2 * time.Hour)) {
		next.Apply(e)
	}
	if o := next.Open["a@1"]; o == nil || o.Plan == nil || !o.Plan.Started.Equal(start) || o.Runner != "job" {
		t.Fatalf("after a checkpoint: %+v", o)
	}
}
