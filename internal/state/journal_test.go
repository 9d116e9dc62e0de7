package state

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/ledger"
)

// members counts the gzip members of a ledger file: one per write.
func members(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	br := bytes.NewReader(data)
	for br.Len() > 0 {
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestBatchWritesOnce: what a batch records is one gzip member (one
// write, one fsync), the state sees each event as it is recorded, and
// the file replays to the same state, chain intact.
func TestBatchWritesOnce(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	j := NewJournal(store, New(now), ledger.Tail{}, func() time.Time { return now }, false)
	if err := j.Record(run("a", now, ledger.RunClaimed, 1)); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, store.SegmentPath("2026-11", 0))
	err := j.Batch(func() error {
		for i := range 50 {
			slot := now.Add(-time.Duration(i+1) * time.Hour)
			if err := j.Record(run("b", slot, ledger.RunClaimed, 1)); err != nil {
				return err
			}
			if len(j.State().Open) != i+2 {
				t.Fatalf("after %d held records the state has %d open claims", i+1, len(j.State().Open))
			}
		}
		if got := members(t, file); got != 1 {
			t.Fatalf("a held record was written: %d members", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := members(t, file); got != 2 {
		t.Fatalf("the batch wrote %d members, want 1", got-1)
	}
	segs, _ := store.Segments()
	if _, err := ledger.Verify(root, segs); err != nil {
		t.Fatalf("chain after a batch: %v", err)
	}
	st, tail, err := Replay(store, now)
	if err != nil || len(st.Open) != 51 || tail.Seq != 51 {
		t.Fatalf("replay: %d open, seq %d, %v", len(st.Open), tail.Seq, err)
	}
	// What follows the batch chains on to it.
	if err := j.Record(run("c", now, ledger.RunClaimed, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Verify(root, segs); err != nil {
		t.Fatalf("chain after a record that follows a batch: %v", err)
	}
}

// TestBatchAcrossMonths: a batch that crosses into a new month writes
// the old month's part first, and the new month opens with a checkpoint.
func TestBatchAcrossMonths(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	clock := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	j := NewJournal(store, New(clock), ledger.Tail{}, func() time.Time { return clock }, false)
	err := j.Batch(func() error {
		if err := j.Record(run("a", clock, ledger.RunClaimed, 1)); err != nil {
			return err
		}
		clock = clock.Add(2 * time.Minute)
		j.State().Now = clock
		return j.Record(run("a", clock, ledger.RunCompleted, 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := store.Segments()
	if len(segs) != 2 {
		t.Fatalf("segments %v", segs)
	}
	if first, err := ledger.First(root, segs[1]); err != nil || first.Event != ledger.LedgerCheckpoint {
		t.Fatalf("December does not open with a checkpoint: %+v %v", first, err)
	}
	if _, err := ledger.Verify(root, segs); err != nil {
		t.Fatalf("chain across months in one batch: %v", err)
	}
}

// TestBatchWriteFailureStops: when the batch cannot be written, the
// journal refuses every later record: its state holds events the file
// does not, and chaining on to them would break the ledger.
func TestBatchWriteFailureStops(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	j := NewJournal(store, New(now), ledger.Tail{}, func() time.Time { return now }, false)
	file := filepath.Join(root, store.SegmentPath("2026-11", 0))
	err := j.Batch(func() error {
		if err := j.Record(run("a", now, ledger.RunClaimed, 1)); err != nil {
			return err
		}
		return os.MkdirAll(file, 0o755) // the file cannot be opened for writing
	})
	if err == nil {
		t.Fatal("a batch that was not written reported success")
	}
	if err := j.Record(run("b", now, ledger.RunClaimed, 1)); err == nil {
		t.Fatal("a record after a failed batch was accepted")
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(); err == nil {
		t.Fatal("a failed batch was written later")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("something was written after the failure: %v", err)
	}
}

// TestDeadLettersRewrittenOnlyWhenChanged: the dead letters pile up, so
// their file is written by the runs that change them, not by every run.
func TestDeadLettersRewrittenOnlyWhenChanged(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	dead := func(id string) *ledger.Event {
		e := run(id, now, ledger.RunDeadLettered, 1)
		e.Attempt, e.Error = 3, "failed 3 times"
		return e
	}
	deadFile := filepath.Join(root, DeadLettersPath)
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	// session records evs and saves the snapshot; it says whether the dead
	// letters' file was written (its time moved).
	session := func(evs ...*ledger.Event) (rewritten bool) {
		t.Helper()
		os.Chtimes(deadFile, old, old)
		st, tail, err := Replay(store, now)
		if err != nil {
			t.Fatal(err)
		}
		j := NewJournal(store, st, tail, func() time.Time { return now }, false)
		if err := j.Record(evs...); err != nil {
			t.Fatal(err)
		}
		if err := j.SaveSnapshot(); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(j.Files(), DeadLettersPath) || !slices.Contains(j.Files(), SnapshotPath) {
			t.Fatalf("the snapshot's pair is not in the commit: %v", j.Files())
		}
		now = now.Add(5 * time.Minute)
		fi, err := os.Stat(deadFile)
		if err != nil {
			t.Fatal(err)
		}
		return !fi.ModTime().Equal(old)
	}
	if !session(dead("a")) {
		t.Fatal("the first snapshot wrote no dead letters' file")
	}
	if session(run("b", now, ledger.RunClaimed, 1)) {
		t.Fatal("a run that changed no dead letter rewrote their file")
	}
	if !session(dead("c")) {
		t.Fatal("a new dead letter was not written")
	}
	if _, err := VerifySnapshot(store); err != nil {
		t.Fatal(err)
	}
}

// count is how many events of kind a log holds.
func count(t *testing.T, s *ledger.Store, kind ledger.Kind) int {
	t.Helper()
	segs, err := s.Segments()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if _, err := ledger.Scan(s.Root(), segs, ledger.ScanOptions{}, func(e *ledger.Event) error {
		if e.Event == kind {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBatchHoldsSideLogs: the approval log's copy of a held event is held
// too, and written after the ledger's line: a kill before the flush must
// not leave the approval log saying an approval was used while the ledger
// does not (the next run would use it again).
func TestBatchHoldsSideLogs(t *testing.T) {
	root := t.TempDir()
	store, alog := ledger.Open(root, 0), ledger.OpenApprovalLog(root)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	consumed := run("a", now, ledger.ApprovalConsumed, 1)
	consumed.Status = ledger.StatusConsumed
	j := NewJournal(store, New(now), ledger.Tail{}, func() time.Time { return now }, false)
	err := j.Batch(func() error {
		if err := j.Record(run("a", now, ledger.RunClaimed, 1), consumed); err != nil {
			return err
		}
		if l, a := count(t, store, ledger.ApprovalConsumed), count(t, alog, ledger.ApprovalConsumed); l != 0 || a != 0 {
			t.Fatalf("inside the batch: the ledger has %d approval.consumed, the approval log %d", l, a)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l, a := count(t, store, ledger.ApprovalConsumed), count(t, alog, ledger.ApprovalConsumed); l != 1 || a != 1 {
		t.Fatalf("after the batch: the ledger has %d approval.consumed, the approval log %d", l, a)
	}
}

// TestBatchRollsOver: held lines count towards the segment's size, so a
// large batch rolls over to new segments as single appends do.
func TestBatchRollsOver(t *testing.T) {
	root := t.TempDir()
	const size = 16 << 10
	store := ledger.Open(root, size)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	j := NewJournal(store, New(now), ledger.Tail{}, func() time.Time { return now }, false)
	err := j.Batch(func() error {
		for i := range 3000 {
			if err := j.Record(run("b", now.Add(-time.Duration(i)*time.Hour), ledger.RunClaimed, 1)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	segs, _ := store.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments for a batch several times segment_size", len(segs))
	}
	for _, s := range segs {
		if s.Size > 2*size {
			t.Fatalf("segment %s is %d bytes with segment_size %d", s.Path, s.Size, size)
		}
	}
	if _, err := ledger.Verify(root, segs); err != nil {
		t.Fatal(err)
	}
}
