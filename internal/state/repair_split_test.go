package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// TestTornCheckpointNotSalvaged: a run killed while writing the month's
// first member (a checkpoint split into parts, then events) leaves a torn
// member. Repair keeps complete lines that chain, but never part of a
// checkpoint: the month would replay from a state that silently lacks the
// rest. The member goes whole, and the next record opens the month again.
func TestTornCheckpointNotSalvaged(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	nov := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	clock := nov
	j := NewJournal(store, New(nov), ledger.Tail{}, func() time.Time { return clock }, false)
	recordDeadLetters(t, j, nov, run("zz", nov, ledger.RunClaimed, 1)) // and a live claim of another schedule
	segs := intoDecember(t, j, store, &clock)
	want := j.State()
	// kill during the write of December's first member: cut the file
	dec := filepath.Join(root, segs[1].Path)
	data, _ := os.ReadFile(dec)
	if err := os.WriteFile(dec, data[:len(data)*2/5], 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Replay(store, clock)
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("torn file not seen: %v", err)
	}
	segs, _ = store.Segments()
	rep, err := store.Repair(segs, ce)
	if err != nil {
		t.Fatalf("repair refused: %v", err)
	}
	if rep.Salvaged != 0 {
		t.Fatalf("repair salvaged %d lines of a checkpoint", rep.Salvaged)
	}
	st, tail, err := Replay(store, clock)
	if err != nil {
		t.Fatal(err)
	}
	j2 := NewJournal(store, st, tail, func() time.Time { return clock }, false)
	if err := j2.Record(run("b", clock, ledger.RunClaimed, 1)); err != nil {
		t.Fatal(err)
	}
	st, _, _ = Replay(store, clock)
	if len(st.DeadLetters) != len(want.DeadLetters) || len(st.Open) < len(want.Open)-1 || st.Open[ledger.SlotKey("zz", nov)] == nil {
		t.Fatalf("after repair: %d dead letters (had %d), open claim of zz present: %v, %d schedules (had %d)",
			len(st.DeadLetters), len(want.DeadLetters), st.Open[ledger.SlotKey("zz", nov)] != nil, len(st.Schedules), len(want.Schedules))
	}
}
