package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/gittest"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// deadLetter records a dead letter in the checkout at dir and writes the
// snapshot, as a run does before its commit.
func deadLetter(t *testing.T, dir, key string, now time.Time) {
	t.Helper()
	store := ledger.Open(dir, sparseSegment)
	st, tail, err := state.Replay(store, now)
	if err != nil {
		t.Fatal(err)
	}
	j := state.NewJournal(store, st, tail, func() time.Time { return now }, false)
	if err := j.Record(&ledger.Event{Event: ledger.RunDeadLettered, ScheduleID: "tick", IdempotencyKey: key, Slot: now,
		Mode: ledger.ModeScheduled, Status: ledger.StatusDeadLetter, Attempt: 3, Error: "failed"}); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveSnapshot(); err != nil {
		t.Fatal(err)
	}
}

// TestKilledRunLeavesSnapshotPair: a persistent runner is killed after
// writing the snapshot and a changed dead letters' file, before its commit.
// The next run commits the appended ledger, and must not commit a snapshot
// naming a dead letters' file the branch does not hold: it starts over
// from the branch's pair, which a fresh checkout can use.
func TestKilledRunLeavesSnapshotPair(t *testing.T) {
	bare, last := month(t, 3_000)
	dir := filepath.Join(t.TempDir(), "persistent")
	gittest.Must(t, ".", "clone", "-q", "file://"+bare, dir)
	now := last.Add(3 * time.Minute)
	// An earlier run dead-lettered a slot, committed and pushed.
	deadLetter(t, dir, "tick@zzz", now)
	gittest.Must(t, dir, "add", "-A", "var")
	gittest.Must(t, dir, "commit", "-qm", "a run")
	gittest.Must(t, dir, "push", "-q", "origin", "main")
	// The next one is killed after writing its files, before its commit.
	deadLetter(t, dir, "tick@aaa", now.Add(time.Minute))
	rep := tick(t, dir, now.Add(7*time.Minute))
	if !rep.Pushed {
		t.Fatalf("not pushed: %q", rep.Warnings)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	gittest.Must(t, ".", "clone", "-q", "file://"+bare, fresh)
	if _, err := state.VerifySnapshot(ledger.Open(fresh, sparseSegment)); err != nil {
		t.Fatalf("the pushed snapshot: %v", err)
	}
	st, _, err := state.Replay(ledger.Open(fresh, sparseSegment), now.Add(8*time.Minute))
	if err != nil || st.Fallback() != "" {
		t.Fatalf("a fresh checkout cannot use the snapshot: %v %s", err, st.Fallback())
	}
}
