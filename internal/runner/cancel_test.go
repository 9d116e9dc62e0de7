package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	e.runDue("2026-11-22T00:00:30Z", sealedMarks) // the schedule is seen: its next slot runs
	started := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		close(started)
		<-ctx.Done() // runs until stopped, as the executor's tools do
		return executor.Result{Status: executor.StatusFailed, Reason: executor.ReasonCanceled, Error: "killed", Output: "partial"}
	}
	const key = "h@2026-11-22T01:00:00Z"
	reps := make(chan *Report, 1)
	go func() { reps <- e.runDue("2026-11-22T01:00:30Z", sealedMarks) }()
	<-started
	c := e.clone()
	// A link in the marker's place (a writer's) is replaced, never
	// written through.
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(c.dir, filepath.FromSlash(markerPath(key)))
	if err := os.MkdirAll(filepath.Dir(marker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, marker); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.runner("2026-11-22T01:01:00Z", sealedMarks).Cancel(context.Background(), key, "wrong input", ownerIdentity()); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Fatalf("the marker was written through a link: %q %v", b, err)
	}
	if fi, err := os.Lstat(marker); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the marker: %v %v", fi, err)
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

// A runner that does not look for cancels (cancel_poll: 0) records its
// attempt's end and a retry after the cancel: the retry opens nothing,
// and the next run-due leaves the slot alone.
func TestCancelUnseenByItsRunner(t *testing.T) {
	e := newEnv(t, hourly)
	e.cancelPoll(0)
	e.runDue("2026-11-22T00:00:30Z")
	release := make(chan struct{})
	started := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		close(started)
		<-release
		return executor.Result{Status: executor.StatusFailed, Reason: ledger.ReasonExit, Error: "exit 1"}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.runDue("2026-11-22T01:00:30Z")
	}()
	<-started
	const key = "h@2026-11-22T01:00:00Z"
	c := e.clone()
	if _, _, err := c.runner("2026-11-22T01:01:00Z").Cancel(context.Background(), key, "wrong input", ownerIdentity()); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	close(release)
	<-done
	if n := e.count(ledger.RunRetryScheduled, "h"); n != 1 {
		t.Fatalf("%d retries recorded, want the one the runner recorded unaware", n)
	}
	e.exec.running = nil
	ran := e.exec.runs("h")
	rep := e.runDue("2026-11-22T01:30:00Z")
	if n := e.exec.runs("h"); n != ran || len(rep.Outcomes) != 0 {
		t.Errorf("the cancelled slot ran again: %+v", rep.Outcomes)
	}
}

// A cancelled attempt whose runner died ends as cancelled once its
// claim's deadline has passed: not lost, not retried. run --claim does
// not take a cancelled claim.
func TestCancelledClaimPastItsDeadline(t *testing.T) {
	e := newEnv(t, hourly)
	e.runDue("2026-11-22T00:00:30Z")
	victim := e.clone()
	release := make(chan struct{})
	started := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		close(started)
		<-release // the runner is gone meanwhile
		return executor.Result{Status: executor.StatusFailed, Reason: ledger.ReasonExit}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = victim.runner("2026-11-22T01:00:30Z").RunDue(context.Background())
	}()
	defer func() { close(release); <-done }()
	<-started
	const key = "h@2026-11-22T01:00:00Z"
	c := e.clone()
	if _, _, err := c.runner("2026-11-22T01:01:00Z").Cancel(context.Background(), key, "wrong input", ownerIdentity()); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	var seq int64
	for _, ev := range e.events() {
		if ev.Event == ledger.RunCancelled {
			seq = ev.Seq
		}
	}
	e.remote.mu.Lock()
	mark := string(e.remote.files[markerPath(key)])
	e.remote.mu.Unlock()
	if want := fmt.Sprintf(`{"key":%q,"attempt":1,"claimed_at":"2026-11-22T01:00:30Z","seq":%d,"by":"octocat","reason":"wrong input"}`, key, seq); strings.TrimSpace(mark) != want {
		t.Errorf("the marker holds %q, want %s", mark, want)
	}
	if _, reason, _ := c.runner("2026-11-22T01:02:00Z").sessionTake(t, key); reason != "cancelled" {
		t.Errorf("run --claim of a cancelled claim: reason %q", reason)
	}
	e.exec.running = nil
	late := e.clone()
	rep := late.runDue("2026-11-22T01:30:00Z")
	if o := outcome(t, rep, "h"); o.Action != ActionFailed || o.Reason != ledger.ReasonCancelled || !strings.Contains(o.Detail, "cancelled by octocat: wrong input") {
		t.Fatalf("past the deadline: %+v", o)
	}
	if n := e.count(ledger.RunRetryScheduled, "h") + e.count(ledger.RunDeadLettered, "h"); n != 0 {
		t.Errorf("%d retries or dead letters of a cancelled run", n)
	}
}

// sessionTake is what run --claim would answer for key.
func (r *Runner) sessionTake(t *testing.T, key string) (*task, string, string) {
	t.Helper()
	s, err := r.open(context.Background(), "run")
	if err != nil {
		t.Fatal(err)
	}
	return s.take(key)
}

// A look for a cancel that fails is a warning, once, and the tool runs on.
func TestCancelLookFails(t *testing.T) {
	e := newEnv(t, hourly)
	e.cancelPoll(time.Millisecond)
	e.runDue("2026-11-22T00:00:30Z")
	looks := make(chan struct{}, 3)
	e.git.fetchHook = func(context.Context) error {
		select {
		case looks <- struct{}{}:
		default:
		}
		return errors.New("connection refused")
	}
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		for range 3 {
			<-looks
		}
		return executor.Result{Status: executor.StatusOK, Output: "done"}
	}
	rep := e.runDue("2026-11-22T01:00:30Z")
	if o := outcome(t, rep, "h"); o.Action != ActionRan {
		t.Fatalf("outcome: %+v", o)
	}
	n := 0
	for _, w := range rep.Warnings {
		if strings.Contains(w, "looking for a cancel of h@2026-11-22T01:00:00Z failed") && strings.Contains(w, "connection refused") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings about the failed looks, want 1: %q", n, rep.Warnings)
	}
}

// sealedMarks seals markers as a sealed ledger's runs do (a stand-in for
// the ledger key's signature).
func sealedMarks(o *Options) {
	seal := func(name string, body []byte) string { return fmt.Sprintf("seal(%s,%x)", name, body) }
	o.SignSpill = func(name string, body []byte) ([]byte, error) { return []byte(seal(name, body)), nil }
	o.VerifySpill = func(name string, body, sig []byte) error {
		if string(sig) != seal(name, body) {
			return errors.New("no valid seal")
		}
		return nil
	}
}

// In a sealed ledger, a cancel marker a writer pushed (no seal of the
// ledger key) stops nothing: the tool runs to its end, and the run says
// why the marker was ignored.
func TestForgedCancelMarkerStopsNothing(t *testing.T) {
	e := newEnv(t, hourly)
	e.cancelPoll(time.Millisecond)
	e.runDue("2026-11-22T00:00:30Z", sealedMarks)
	const key = "h@2026-11-22T01:00:00Z"
	looks := make(chan struct{}, 1)
	e.git.fetchHook = func(context.Context) error {
		select {
		case looks <- struct{}{}:
		default:
		}
		return nil
	}
	started, release := make(chan struct{}), make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		close(started)
		select {
		case <-ctx.Done():
			return executor.Result{Status: executor.StatusFailed, Reason: executor.ReasonCanceled, Error: "killed"}
		case <-release:
			return executor.Result{Status: executor.StatusOK}
		}
	}
	reps := make(chan *Report, 1)
	go func() { reps <- e.runDue("2026-11-22T01:00:30Z", sealedMarks) }()
	<-started
	forged, _ := json.Marshal(cancelMark{Key: key, Seq: 3, By: "octocat", Reason: "forged"})
	e.remote.mu.Lock()
	e.remote.files[markerPath(key)] = forged
	e.remote.version++
	e.remote.mu.Unlock()
	var rep *Report
	for n := 0; n < 3 && rep == nil; { // the watcher looks three times since the forgery
		select {
		case <-looks:
			n++
		case rep = <-reps: // the forged marker stopped the tool
		}
	}
	close(release)
	if rep == nil {
		rep = <-reps
	}
	if o := outcome(t, rep, "h"); o.Action != ActionRan {
		t.Fatalf("outcome: %+v", o)
	}
	if w := strings.Join(rep.Warnings, "\n"); !strings.Contains(w, "carries no valid seal of the ledger key") {
		t.Fatalf("warnings: %s", w)
	}
}

// endSignal closes ended when name's outcome is recorded.
type endSignal struct {
	name  string
	ended chan struct{}
}

func (p endSignal) Begin(string, time.Time, bool) {}
func (p endSignal) Start(string)                  {}
func (p endSignal) End(_, name, _ string) {
	if name == p.name {
		close(p.ended)
	}
}

// A look for a cancel that hangs on the remote delays no other task: a
// task beside it ends and is recorded while the look waits.
func TestHangingLookBlocksNoOtherTask(t *testing.T) {
	e := newEnv(t, `schedules:
  - {id: a, name: a, cron: "0 * * * *", target_tool: work}
  - {id: b, name: b, cron: "0 * * * *", target_tool: work}
`)
	e.cancelPoll(time.Millisecond)
	e.runDue("2026-11-22T00:00:30Z")
	hanging, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.git.fetchHook = func(ctx context.Context) error {
		once.Do(func() { close(hanging) })
		select {
		case <-release:
		case <-ctx.Done():
		}
		return errors.New("timed out")
	}
	bEnded := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		<-hanging
		if req.ScheduleID == "a" {
			select {
			case <-bEnded:
			case <-time.After(time.Minute): // a deadlock's guard, not a timing
				return executor.Result{Status: executor.StatusFailed, Error: "b was not recorded while a's look hung"}
			}
			close(release)
		}
		return executor.Result{Status: executor.StatusOK, Output: "done"}
	}
	rep := e.runDue("2026-11-22T01:00:30Z", func(o *Options) { o.MaxParallel, o.Progress = 2, endSignal{"b", bEnded} })
	if o := outcome(t, rep, "a"); o.Action != ActionRan {
		t.Fatalf("a: %+v", o)
	}
	if o := outcome(t, rep, "b"); o.Action != ActionRan {
		t.Fatalf("b: %+v", o)
	}
}

// A sealed marker names the claim it cancelled: pushed back onto the
// branch by a writer while a later run of the same key runs (a backfill
// of the cancelled slot), it stops nothing.
func TestOldCancelMarkerStopsNoLaterRun(t *testing.T) {
	e := newEnv(t, hourly)
	e.cancelPoll(time.Millisecond)
	e.runDue("2026-11-22T00:00:30Z", sealedMarks)
	const key = "h@2026-11-22T01:00:00Z"
	started := make(chan struct{}, 2)
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		started <- struct{}{}
		<-ctx.Done()
		return executor.Result{Status: executor.StatusFailed, Reason: executor.ReasonCanceled, Error: "killed"}
	}
	reps := make(chan *Report, 1)
	go func() { reps <- e.runDue("2026-11-22T01:00:30Z", sealedMarks) }()
	<-started
	if _, _, err := e.clone().runner("2026-11-22T01:01:00Z", sealedMarks).Cancel(context.Background(), key, "wrong input", ownerIdentity()); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	e.remote.mu.Lock()
	old := e.remote.files[markerPath(key)]
	e.remote.mu.Unlock()
	if o := outcome(t, <-reps, "h"); o.Reason != ledger.ReasonCancelled || len(old) == 0 {
		t.Fatalf("the first run: %+v; marker %q", o, old)
	}

	// The slot is backfilled; while its tool runs, a writer pushes the old
	// marker back, and the watcher looks three times since.
	looks := make(chan struct{}, 1)
	e.git.fetchHook = func(context.Context) error {
		select {
		case looks <- struct{}{}:
		default:
		}
		return nil
	}
	release := make(chan struct{})
	e.exec.running = func(ctx context.Context, req executor.Request) executor.Result {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return executor.Result{Status: executor.StatusFailed, Reason: executor.ReasonCanceled, Error: "killed"}
		case <-release:
			return executor.Result{Status: executor.StatusOK}
		}
	}
	at, _ := time.Parse(time.RFC3339, "2026-11-22T01:00:00Z")
	done := make(chan *Report, 1)
	go func() {
		rep, err := e.runner("2026-11-22T01:40:00Z", sealedMarks).Backfill(context.Background(), e.cfg.Schedule("h"), Backfill{From: at, To: at, Max: 1, Reason: "rerun"}, ownerIdentity())
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	<-started
	e.remote.mu.Lock()
	e.remote.files[markerPath(key)] = old
	e.remote.version++
	e.remote.mu.Unlock()
	var rep *Report
	for n := 0; n < 3 && rep == nil; {
		select {
		case <-looks:
			n++
		case rep = <-done: // the old marker stopped the backfill
		}
	}
	close(release)
	if rep == nil {
		rep = <-done
	}
	if o := outcome(t, rep, "h"); o.Action != ActionRan {
		t.Fatalf("the backfill: %s %s %s", o.Action, o.Reason, o.Detail)
	}
}
