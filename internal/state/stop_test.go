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

// run.cancelled of a running attempt marks its claim, which a checkpoint
// carries; the attempt's end closes the slot, and a retry or dead letter
// recorded with that end (by a runner that had not seen the cancel) is
// not opened.
func TestCancelRunning(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	for _, then := range []ledger.Kind{ledger.RunRetryScheduled, ledger.RunDeadLettered} {
		s := New(at)
		s.Apply(&ledger.Event{Seq: 1, TS: at, Event: ledger.RunClaimed, Status: ledger.StatusClaimed, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 1, Mode: ledger.ModeScheduled})
		s.Apply(&ledger.Event{Seq: 2, TS: at, Event: ledger.RunCancelled, Status: ledger.StatusCancelled, ScheduleID: "a", IdempotencyKey: "a@k", By: "octocat", Error: "wrong input"})
		o := s.Open["a@k"]
		if o == nil || o.Status != OpenClaimed || o.Cancelled == nil || o.Cancelled.By != "octocat" || o.Cancelled.Reason != "wrong input" || o.Cancelled.Seq != 2 {
			t.Fatalf("open after the cancel = %+v", o)
		}
		fresh := New(at)
		fresh.add(&s.snapshot)
		if c := fresh.Open["a@k"]; c == nil || c.Cancelled == nil || c.Cancelled.By != "octocat" {
			t.Fatalf("a checkpoint lost the cancel: %+v", c)
		}
		s.Apply(&ledger.Event{Seq: 3, TS: at, Event: ledger.RunFailed, Status: ledger.StatusFailed, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 1, Reason: ledger.ReasonExit})
		s.Apply(&ledger.Event{Seq: 4, TS: at, Event: then, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 2, RetryAt: at})
		if s.Open["a@k"] != nil || s.DeadLetters["a@k"] != nil {
			t.Errorf("%s after a cancelled attempt's end: open %+v, dead letter %+v", then, s.Open["a@k"], s.DeadLetters["a@k"])
		}
		// A later failure of the same key is retried as usual.
		s.Apply(&ledger.Event{Seq: 5, TS: at, Event: ledger.RunClaimed, Status: ledger.StatusClaimed, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 1})
		s.Apply(&ledger.Event{Seq: 6, TS: at, Event: ledger.RunFailed, Status: ledger.StatusFailed, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 1})
		s.Apply(&ledger.Event{Seq: 7, TS: at, Event: ledger.RunRetryScheduled, ScheduleID: "a", IdempotencyKey: "a@k", Attempt: 2, RetryAt: at})
		if o := s.Open["a@k"]; o == nil || o.Status != OpenRetry {
			t.Errorf("a failure after the cancelled one was not retried: %+v", o)
		}
	}
}

// A plan's claim no job took yet ends with its cancel; one a job took is
// marked, and its end closes it.
func TestCancelPlannedClaim(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	s := New(at)
	s.putOpen("a@k", &Open{ScheduleID: "a", Status: OpenClaimed, Attempt: 1, Plan: &PlanDetail{}})
	s.putOpen("b@k", &Open{ScheduleID: "b", Status: OpenClaimed, Attempt: 1, Plan: &PlanDetail{Started: at}})
	s.Apply(&ledger.Event{Seq: 1, TS: at, Event: ledger.RunCancelled, ScheduleID: "a", IdempotencyKey: "a@k", Status: ledger.StatusCancelled, By: "octocat"})
	s.Apply(&ledger.Event{Seq: 2, TS: at, Event: ledger.RunCancelled, ScheduleID: "b", IdempotencyKey: "b@k", Status: ledger.StatusCancelled, By: "octocat"})
	if s.Open["a@k"] != nil {
		t.Fatalf("the claim no job took is still open: %+v", s.Open["a@k"])
	}
	if o := s.Open["b@k"]; o == nil || o.Cancelled == nil || o.Cancelled.By != "octocat" {
		t.Fatalf("the running job's claim: %+v", o)
	}
}
