package ledgerops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// segment is the ledger file the tests write to (November 2026).
var segment = ledger.Dir + "/2026-11.ndjson.gz"

// tornLedger is a ledger of three events whose last append was cut short
// by a kill: the first bytes of a fourth gzip member follow the intact
// ones. It returns the root and the length of the intact part.
func tornLedger(t *testing.T) (root string, intact int64) {
	root = t.TempDir()
	record(t, root, "a", "b", "c")
	file := filepath.Join(root, filepath.FromSlash(segment))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, data[:40]...), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, int64(len(data))
}

func events(t *testing.T, root string) string {
	t.Helper()
	evs, _, err := ledger.ReadAll(root, mustSegments(t, root))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Event))
	}
	return strings.Join(kinds, " ")
}

func TestRepairIntactLedger(t *testing.T) {
	root := t.TempDir()
	record(t, root, "a")
	before := tree(t, root)
	rep, err := Repair(root, 0, Clock{Now: clock}, nil, nil)
	if rep != nil || err != nil {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	if after := tree(t, root); len(after) != len(before) || string(after[segment]) != string(before[segment]) {
		t.Fatal("an intact ledger changed")
	}
}

// A torn tail after what git holds is cut, every complete event kept, and
// the cut recorded; the snapshot follows the repaired ledger.
func TestRepairCutsATornTail(t *testing.T) {
	root, intact := tornLedger(t)
	git := fakeSizes{committed: map[string]int64{segment: intact}, pushed: map[string]int64{segment: intact}}
	rep, err := Repair(root, 0, Clock{Now: clock}, git, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.File != segment || rep.Offset != intact || rep.Dropped != 40 {
		t.Fatalf("repaired %+v", rep)
	}
	if got := events(t, root); got != "schedule.created schedule.created schedule.created ledger.repaired" {
		t.Fatalf("ledger holds %s", got)
	}
	if v, err := Verify(root, 0, nil, nil); err != nil || v.Damaged() {
		t.Fatalf("after the repair: %+v, %v", v, err)
	}
}

// Bytes git holds are history, never a torn tail: a cut below what the
// branch or the remote has is refused, the file untouched, with how to
// restore it. Without git the same damage is cut: git's sizes decide.
func TestRepairNeverCutsWhatGitHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		git  Sizer
		msg  string
	}{
		{"committed", fakeSizes{committed: map[string]int64{segment: 1 << 20}}, "already committed"},
		{"pushed", fakeSizes{pushed: map[string]int64{segment: 1 << 20}}, "already pushed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := tornLedger(t)
			before := tree(t, root)
			_, err := Repair(root, 0, Clock{Now: clock}, tc.git, nil)
			if !errors.Is(err, errkind.ErrLedger) || !errors.Is(err, ledger.ErrNotRepairable) ||
				!strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "git checkout -- "+segment) {
				t.Fatalf("Repair = %v", err)
			}
			if string(tree(t, root)[segment]) != string(before[segment]) {
				t.Fatal("a refused repair changed the file")
			}
		})
	}
	t.Run("git cannot tell", func(t *testing.T) {
		root, _ := tornLedger(t)
		if rep, err := Repair(root, 0, Clock{Now: clock}, fakeSizes{err: errors.New("no such ref")}, nil); err != nil || rep.Dropped != 40 {
			t.Fatalf("Repair = %+v, %v", rep, err)
		}
	})
}

// Damage that is not a torn tail (a flipped byte with intact members
// after it) is refused with how to restore the file, which is untouched;
// the hint a replay gives for it says the same.
func TestRepairRefusesDamageThatIsNotATornTail(t *testing.T) {
	root := t.TempDir()
	record(t, root, "a", "b")
	file := filepath.Join(root, filepath.FromSlash(segment))
	data, _ := os.ReadFile(file)
	record(t, root, "c")
	flipped, _ := os.ReadFile(file)
	flipped[len(data)-20] ^= 0xff // inside b's member; c's follows intact
	if err := os.WriteFile(file, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Repair(root, 0, Clock{Now: clock}, nil, nil)
	if !errors.Is(err, errkind.ErrLedger) || !errors.Is(err, ledger.ErrNotRepairable) ||
		!strings.Contains(err.Error(), "not a torn tail") || !strings.Contains(err.Error(), "git checkout -- "+segment) {
		t.Fatalf("Repair = %v", err)
	}
	if now, _ := os.ReadFile(file); string(now) != string(flipped) {
		t.Fatal("a refused repair changed the file")
	}
	_, _, err = state.Replay(ledger.Open(root, 0), moveNow)
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || ce.Repairable() {
		t.Fatalf("replay = %v", err)
	}
	if hint := RepairHint(ce); strings.Contains(hint, "--repair") || !strings.Contains(hint, "will not cut valid history") {
		t.Fatalf("hint %q", hint)
	}
}

// A torn tail of another log (agent memory) is cut too, and the repair
// recorded in the ledger.
func TestRepairOtherLogs(t *testing.T) {
	root := t.TempDir()
	j := record(t, root, "a")
	if err := j.Record(&ledger.Event{Event: ledger.MemoryStored, Status: ledger.StatusOK, ScheduleID: "a"}); err != nil {
		t.Fatal(err)
	}
	segs, err := ledger.OpenDir(root, state.MemoryDir, 0).Segments()
	if err != nil || len(segs) != 1 {
		t.Fatalf("memory log: %v, %v", segs, err)
	}
	file := filepath.Join(root, filepath.FromSlash(segs[0].Path))
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(file, append(data, data[:30]...), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Repair(root, 0, Clock{Now: clock}, nil, nil)
	if err != nil || rep.File != segs[0].Path || rep.Dropped != 30 {
		t.Fatalf("Repair = %+v, %v", rep, err)
	}
	if got := events(t, root); !strings.HasSuffix(got, " ledger.repaired") {
		t.Fatalf("ledger holds %s", got)
	}
}

func TestRepairHintOfATornTail(t *testing.T) {
	root, _ := tornLedger(t)
	_, _, err := state.Replay(ledger.Open(root, 0), moveNow)
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || !ce.Repairable() {
		t.Fatalf("replay = %v", err)
	}
	if hint := RepairHint(ce); !strings.Contains(hint, "astra run-due --repair") || !strings.Contains(hint, "astra ledger repair") {
		t.Fatalf("hint %q", hint)
	}
}
