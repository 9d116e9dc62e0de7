package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture writes a ledger of two files, the newer one of several gzip
// members, and returns its root.
func fixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	s := testStore(root)
	var tail Tail
	for range 11 { // 3 files, 3 members in the newest
		tail = appendN(t, s, tail, t0, 4)
	}
	segs, err := s.Segments()
	if err != nil || len(segs) < 2 {
		t.Fatalf("fixture: %v %v", segs, err)
	}
	data, _ := os.ReadFile(filepath.Join(root, segs[len(segs)-1].Path))
	if n := len(members(data)); n < 3 {
		t.Fatalf("fixture: the newest file has %d members", n)
	}
	return root
}

// testStore has small segments and does not fsync.
func testStore(root string) *Store { return Open(root, 3000).NoSync() }

// snapshot reads every file under root.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// reset puts root back to snap: the same files, the same bytes.
func reset(t *testing.T, root string, snap map[string]string) {
	t.Helper()
	for p, data := range snapshot(t, root) {
		if want, ok := snap[p]; !ok {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		} else if want != data {
			if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, want := range snap {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// verifyFirst verifies the ledger and returns the events handed over before
// the first problem (complete and chained), and the problem.
func verifyFirst(t *testing.T, root string) ([]Event, *CorruptError) {
	t.Helper()
	segs, err := testStore(root).Segments()
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	_, err = Scan(root, segs, ScanOptions{Verify: true}, func(e *Event) error {
		evs = append(evs, *e)
		return nil
	})
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("verify: %v", err)
	}
	return evs, ce
}

func newest(t *testing.T, root string) (string, []Segment) {
	t.Helper()
	segs, err := testStore(root).Segments()
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return filepath.Join(root, segs[len(segs)-1].Path), segs
}

// TestRepairRefusesAFlipBeforeTheLastMember is the reported case: a byte
// flipped in the member before the last. verify names it; repair must not
// cut from there to the end of the file (dropping the intact last member)
// but refuse, leave the file alone, and say how to restore it.
func TestRepairRefusesAFlipBeforeTheLastMember(t *testing.T) {
	t.Parallel()
	root := fixture(t)
	file, _ := newest(t, root)
	data, _ := os.ReadFile(file)
	ms := members(data)
	victim := ms[len(ms)-2]
	reported := 0
	for off := victim.start + 10; off < victim.end-8; off += 3 { // the deflate data
		bad := bytes.Clone(data)
		bad[off] ^= 0x10
		if err := os.WriteFile(file, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, ce := verifyFirst(t, root)
		if ce == nil {
			continue // a padding bit of the deflate stream: the data is unchanged
		}
		reported++
		if ce.Repairable() {
			t.Fatalf("flip at %d: %v is called repairable", off, ce)
		}
		before := snapshot(t, root)
		_, segs := newest(t, root)
		_, err := testStore(root).Repair(segs, ce)
		if !errors.Is(err, ErrNotRepairable) || !strings.Contains(err.Error(), "git checkout") {
			t.Fatalf("flip at %d: repair = %v, want a refusal that says how to restore from git", off, err)
		}
		if !sameFiles(before, snapshot(t, root)) {
			t.Fatalf("flip at %d: a refused repair changed files", off)
		}
	}
	if reported == 0 {
		t.Fatal("no flips tried")
	}
}

// TestRepairTornMember: the last member cut short is repaired, complete
// lines are salvaged, and the ledger verifies and continues.
func TestRepairTornMember(t *testing.T) {
	root := fixture(t)
	file, _ := newest(t, root)
	data, _ := os.ReadFile(file)
	ms := members(data)
	last := ms[len(ms)-1]
	// Cut inside the trailer: every line decompresses.
	if err := os.WriteFile(file, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	evs, ce := verifyFirst(t, root)
	if ce == nil || ce.Kind != ProblemTruncated || !ce.Repairable() {
		t.Fatalf("torn member reported as %v (repairable %v)", ce, ce != nil && ce.Repairable())
	}
	_, segs := newest(t, root)
	rep, err := testStore(root).Repair(segs, ce, RepairOptions{Committed: last.start, Pushed: last.start})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Salvaged != 4 || rep.Offset != last.start {
		t.Fatalf("repair %+v, want 4 lines salvaged from offset %d", rep, last.start)
	}
	after, ce := verifyFirst(t, root)
	if ce != nil || len(after) != len(evs) {
		t.Fatalf("after repair: %d events, %v; want %d intact", len(after), ce, len(evs))
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".astra-*")); len(matches) > 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}

// TestRepairNeverLeavesAnEmptyFile: when the torn member is all the file
// had, the file goes (an empty file is not a segment) and the chain goes on
// from the file before.
func TestRepairNeverLeavesAnEmptyFile(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	tail := appendN(t, s, Tail{}, t0, 3)
	dec := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	appendN(t, s, tail, dec, 3)
	segs, _ := s.Segments()
	file := filepath.Join(root, segs[1].Path)
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(file, data[:7], 0o644); err != nil { // inside the gzip header
		t.Fatal(err)
	}
	_, ce := verifyFirst(t, root)
	if ce == nil || !ce.Repairable() {
		t.Fatalf("torn header: %v", ce)
	}
	rep, err := s.Repair(segs, ce)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) || rep.Offset != 0 || rep.Dropped != 7 {
		t.Fatalf("repair %+v left the file: %v", rep, err)
	}
	segs, _ = s.Segments()
	st, err := Verify(root, segs)
	if err != nil || st.Events != 3 || st.Tail.Hash != tail.Hash {
		t.Fatalf("after repair: %+v %v", st, err)
	}
	next := appendN(t, s, st.Tail, dec, 2)
	segs, _ = s.Segments()
	if st, err := Verify(root, segs); err != nil || st.Tail.Hash != next.Hash || st.Events != 5 {
		t.Fatalf("append after repair: %+v %v", st, err)
	}
}

// TestRepairRefusesWhatGitHas: a torn member below the length git has
// (pushed or committed) is history, restored with git checkout, not cut.
func TestRepairRefusesWhatGitHas(t *testing.T) {
	for _, c := range []struct {
		name string
		opts func(size int64) RepairOptions
		want string
	}{
		{"pushed", func(n int64) RepairOptions { return RepairOptions{Pushed: n} }, "already pushed"},
		{"committed", func(n int64) RepairOptions { return RepairOptions{Committed: n} }, "already committed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fixture(t)
			file, segs := newest(t, root)
			data, _ := os.ReadFile(file)
			if err := os.WriteFile(file, data[:len(data)-20], 0o644); err != nil {
				t.Fatal(err)
			}
			_, ce := verifyFirst(t, root)
			if ce == nil || !ce.Repairable() {
				t.Fatalf("torn member: %v", ce)
			}
			before := snapshot(t, root)
			_, err := testStore(root).Repair(segs, ce, c.opts(int64(len(data))))
			if !errors.Is(err, ErrNotRepairable) || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), "git checkout -- "+segs[len(segs)-1].Path) {
				t.Fatalf("repair = %v", err)
			}
			if !sameFiles(before, snapshot(t, root)) {
				t.Fatal("a refused repair changed files")
			}
		})
	}
}

// damage cuts a ledger file (the newest, one time in four any) at a
// random byte, or flips that byte, and says what it did.
func damage(t *testing.T, r *rand.Rand, root string, segs []Segment, flip bool) string {
	t.Helper()
	seg := segs[len(segs)-1]
	if r.IntN(4) == 0 {
		seg = segs[r.IntN(len(segs))]
	}
	file := filepath.Join(root, seg.Path)
	data, _ := os.ReadFile(file)
	n := r.IntN(len(data))
	damaged, what := data[:n], fmt.Sprintf("cut at byte %d of %s", n, seg.Path)
	if flip {
		damaged, what = bytes.Clone(data), fmt.Sprintf("byte %d flipped in %s", n, seg.Path)
		damaged[n] ^= byte(1 + r.IntN(255))
	}
	if err := os.WriteFile(file, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	return what
}

// checkKept: every event read before a repair is still there after it,
// unchanged.
func checkKept(t *testing.T, what string, before, after []Event) {
	t.Helper()
	if len(after) < len(before) {
		t.Fatalf("%s: %d events before, %d after repair", what, len(before), len(after))
	}
	for k := range before {
		if after[k].Seq != before[k].Seq || after[k].Prev != before[k].Prev || after[k].IdempotencyKey != before[k].IdempotencyKey {
			t.Fatalf("%s: event %d changed by repair", what, k)
		}
	}
}

// TestRepairProperty damages the ledger at random (a truncation of any
// file at any point, or a flipped byte anywhere) and holds Repair to its
// promise: either the ledger verifies afterwards and every event that was
// complete and chained before is still there, or Repair refused and every
// file is byte-identical.
func TestRepairProperty(t *testing.T) {
	t.Parallel()
	root := fixture(t)
	base := snapshot(t, root)
	segs, _ := testStore(root).Segments()
	r := rand.New(rand.NewPCG(7, 8))
	repaired, refused := 0, 0
	for i := range 400 {
		reset(t, root, base)
		what := damage(t, r, root, segs, i%2 == 1)
		evs, ce := verifyFirst(t, root)
		if ce == nil {
			continue // a cut at a member boundary, or a flip git would not notice (a gzip header's mtime)
		}
		before := snapshot(t, root)
		cur, _ := testStore(root).Segments()
		_, err := testStore(root).Repair(cur, ce)
		if err != nil {
			if !errors.Is(err, ErrNotRepairable) {
				t.Fatalf("%s: repair failed: %v", what, err)
			}
			if !sameFiles(before, snapshot(t, root)) {
				t.Fatalf("%s: a refused repair changed files", what)
			}
			refused++
			continue
		}
		repaired++
		after, ce := verifyFirst(t, root)
		if ce != nil {
			t.Fatalf("%s: still broken after repair: %v", what, ce)
		}
		checkKept(t, what, evs, after)
	}
	if repaired == 0 || refused == 0 {
		t.Fatalf("repaired %d, refused %d: the damage did not cover both", repaired, refused)
	}
	t.Logf("repaired %d, refused %d", repaired, refused)
}
