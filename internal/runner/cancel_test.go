package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
)

// cancelPoll sets defaults.cancel_poll, as the policies would.
func (e *env) cancelPoll(d time.Duration) {
	p := &e.cfg.Policies.Defaults
	p.CancelPoll = model.Duration(d)
	if p.Meta.Keys == nil {
		p.Meta.Keys = map[string]diag.Pos{}
	}
	p.Meta.Keys["cancel_poll"] = diag.Pos{}
}

// astra cancel of a running attempt, from another checkout: the runner
// sees the marker, stops the tool and records the attempt's end as
// failed, reason cancelled, naming who; no retry, the marker goes, and
// the next run-due leaves the slot alone.
func TestCancelStopsARunningAttempt(t *testing.T) {
	e := newEnv(t, hourly)
	e.cancelPoll(time.Millisecond)
	e.runDue("2026-11-22T00:00:30Z") // the schedule is seen: its next slot runs
	started := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		close(started)
		<-ctx.Done() // runs until stopped, as the executor's tools do
		return executor.Result{Status: executor.StatusFailed, Reason: executor.ReasonCanceled, Error: "killed", Output: "partial"}
	}
	const key = "h@2026-11-22T01:00:00Z"
	reps := make(chan *Report, 1)
	go func() { reps <- e.runDue("2026-11-22T01:00:30Z") }()
	<-started
	c := e.clone()
	if _, _, err := c.runner("2026-11-22T01:01:00Z").Cancel(context.Background(), key, "wrong input", ownerIdentity()); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	rep := <-reps
	if o := outcome(t, rep, "h"); o.Action != ActionFailed || o.Reason != ledger.ReasonCancelled || !strings.Contains(o.Detail, "cancelled by octocat: wrong input") {
		t.Fatalf("outcome: %+v", o)
	}
	var kinds []string
	for _, ev := range e.events() {
		if ev.IdempotencyKey != key {
			continue
		}
		kinds = append(kinds, string(ev.Event)+":"+ev.Reason)
		if ev.Event == ledger.RunFailed && (ev.Output != "partial" || !strings.Contains(ev.Error, "octocat")) {
			t.Errorf("run.failed: %+v", ev)
		}
	}
	if got := strings.Join(kinds, " "); got != "run.claimed: run.cancelled: run.failed:cancelled" {
		t.Fatalf("the key's events: %s", got)
	}
	if _, ok := e.remote.files[markerPath(key)]; ok {
		t.Error("the cancel marker is still on the branch")
	}
	e.exec.running = nil
	ran := e.exec.runs("h")
	e.runDue("2026-11-22T01:30:00Z")
	if n := e.exec.runs("h"); n != ran {
		t.Errorf("the cancelled slot ran again (%d runs, %d before)", n, ran)
	}
}
