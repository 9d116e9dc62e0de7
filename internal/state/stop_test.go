package state

import (
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// The emergency stop holds from astra.paused to astra.resumed, and a
// month checkpoint carries it.
func TestStopFoldsAndCarries(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	s := New(at)
	s.Apply(&ledger.Event{Seq: 1, TS: at, Event: ledger.AstraPaused, Status: ledger.StatusPaused, By: "octocat", Detail: []byte(`{"reason":"runaway"}`)})
	if p := s.Stopped; p == nil || p.By != "octocat" || p.Reason != "runaway" || !p.At.Equal(at) {
		t.Fatalf("stopped = %+v", p)
	}
	fresh := New(at)
	fresh.add(&s.snapshot)
	if fresh.Stopped == nil {
		t.Fatal("a checkpoint lost the stop")
	}
	s.Apply(&ledger.Event{Seq: 2, TS: at, Event: ledger.AstraResumed, Status: ledger.StatusResumed, By: "octocat"})
	if s.Stopped != nil {
		t.Fatalf("still stopped after astra.resumed: %+v", s.Stopped)
	}
}

// run.cancelled withdraws the run's waiting retry and its approval
// request, and leaves another run's request alone.
func TestCancelWithdraws(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	s := New(at)
	s.putOpen("a@k", &Open{ScheduleID: "a", Status: OpenRetry, Attempt: 2, RetryAt: at})
	s.Approvals["b"] = &Approval{Key: "b@k", Status: ledger.StatusPending}
	s.Approvals["c"] = &Approval{Key: "c@other", Status: ledger.StatusPending}
	s.Apply(&ledger.Event{Seq: 1, TS: at, Event: ledger.RunCancelled, ScheduleID: "a", IdempotencyKey: "a@k", Status: ledger.StatusCancelled, By: "octocat"})
	s.Apply(&ledger.Event{Seq: 2, TS: at, Event: ledger.RunCancelled, ScheduleID: "b", IdempotencyKey: "b@k", Status: ledger.StatusCancelled, By: "octocat"})
	s.Apply(&ledger.Event{Seq: 3, TS: at, Event: ledger.RunCancelled, ScheduleID: "c", IdempotencyKey: "c@k", Status: ledger.StatusCancelled, By: "octocat"})
	if s.Open["a@k"] != nil {
		t.Error("the retry is still open")
	}
	if s.Approvals["b"] != nil {
		t.Error("the approval request is still open")
	}
	if s.Approvals["c"] == nil {
		t.Error("another run's approval request was withdrawn")
	}
}
