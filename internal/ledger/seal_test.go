package ledger_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/seal"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func newKeys(t testing.TB, listed ...*seal.Signer) (*ledgerkey.Keys, *seal.Signer) {
	t.Helper()
	priv, _, err := seal.Generate("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s, err := seal.ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubs := []seal.PublicKey{s.Public()}
	for _, l := range listed {
		pubs = append(pubs, l.Public())
	}
	k, err := ledgerkey.New(pubs, s)
	if err != nil {
		t.Fatal(err)
	}
	return k, s
}

// run appends n events as one member, as a run does.
func run(t testing.TB, s *ledger.Store, tail ledger.Tail, n int) ledger.Tail {
	t.Helper()
	evs := make([]*ledger.Event, n)
	for i := range evs {
		at := t0.Add(time.Duration(tail.Seq+int64(i)) * time.Minute)
		evs[i] = &ledger.Event{TS: at, Event: ledger.RunCompleted, ScheduleID: "nightly", Slot: at, IdempotencyKey: fmt.Sprintf("nightly@%d", tail.Seq+int64(i)),
			Actor: "astra", Tool: "deploy", Status: "ok", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Mode: ledger.ModeScheduled}
	}
	seg, _ := s.Target(tail, evs[0].TS)
	tail, err := s.Append(tail, seg, evs)
	if err != nil {
		t.Fatal(err)
	}
	return tail
}

// scan reads the ledger as a sealed replay does, collecting seqs.
func scan(t testing.TB, root string, seals *ledger.Seals) ([]int64, ledger.Tail, error) {
	t.Helper()
	segs, err := ledger.Open(root, 0).Segments()
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	tail, err := ledger.Scan(root, segs, ledger.ScanOptions{Verify: true, Seals: seals}, func(e *ledger.Event) error {
		seqs = append(seqs, e.Seq)
		return nil
	})
	return seqs, tail, err
}

func seqsTo(n int64) []int64 {
	var out []int64
	for i := int64(1); i <= n; i++ {
		out = append(out, i)
	}
	return out
}

func equalSeqs(t testing.TB, got, want []int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events passed on: %v, want %v", got, want)
	}
}

func TestSealedMembersVerify(t *testing.T) {
	keys, _ := newKeys(t)
	root := t.TempDir()
	s := ledger.Open(root, 0).Sealed(keys.Ledger())
	var tail ledger.Tail
	for range 3 {
		tail = run(t, s, tail, 4)
	}
	if tail.Seal == "" {
		t.Fatal("Append returned no seal")
	}
	seqs, got, err := scan(t, root, keys.Ledger())
	if err != nil {
		t.Fatal(err)
	}
	equalSeqs(t, seqs, seqsTo(12))
	if got != tail {
		t.Fatalf("tail %+v, want %+v", got, tail)
	}
	// An unsealed scan reads the same lines and shows the seal too; zcat
	// (a multistream gzip reader) is not bothered by the header field.
	_, plain, err := scan(t, root, nil)
	if err != nil || plain != tail {
		t.Fatalf("unsealed scan: %+v %v", plain, err)
	}
	segs, _ := s.Segments()
	if _, err := ledger.Verify(root, segs, keys.Ledger()); err != nil {
		t.Fatalf("ledger verify: %v", err)
	}
	f, _ := os.Open(filepath.Join(root, segs[0].Path))
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	data, err := io.ReadAll(zr)
	if err != nil || bytes.Count(data, []byte{'\n'}) != 12 {
		t.Fatalf("multistream read: %d lines, %v", bytes.Count(data, []byte{'\n'}), err)
	}
	// Without the key a sealed ledger is not appended to.
	noKey := &ledger.Seals{Check: keys.Ledger().Check}
	if _, err := ledger.Open(root, 0).Sealed(noKey).Append(tail, tail.Segment, []*ledger.Event{{TS: t0, Event: ledger.RunCompleted}}); !errors.Is(err, ledger.ErrNoKey) {
		t.Fatalf("append without the key: %v", err)
	}
}

// TestWriterAppendAfterTheSeal: members appended without the key, to the
// file and in a new segment, are reported with where the sealed part ends,
// never applied, and moved to quarantine whole.
func TestWriterAppendAfterTheSeal(t *testing.T) {
	keys, _ := newKeys(t)
	root := t.TempDir()
	s := ledger.Open(root, 0).Sealed(keys.Ledger())
	var tail ledger.Tail
	for range 3 {
		tail = run(t, s, tail, 4)
	}
	sealed := tail
	file := filepath.Join(root, filepath.FromSlash(tail.Segment.Path))
	before, _ := os.ReadFile(file)

	writer := ledger.Open(root, 0) // a writer or a tool: no key
	tail = run(t, writer, tail, 2)
	tail = run(t, writer, tail, 1)
	seqs, got, err := scan(t, root, keys.Ledger())
	var u *ledger.UnsealedError
	if !errors.As(err, &u) || !errors.Is(err, errkind.ErrLedger) {
		t.Fatalf("err = %v, want an UnsealedError of kind ledger", err)
	}
	equalSeqs(t, seqs, seqsTo(12))
	if got != sealed || u.Sealed != sealed || u.Applied {
		t.Fatalf("tail %+v, sealed %+v (applied %v), want %+v", got, u.Sealed, u.Applied, sealed)
	}
	want := ledger.UnsealedFile{File: sealed.Segment.Path, Offset: sealed.Segment.Size, Seq: 12,
		Bytes: tail.Segment.Size - sealed.Segment.Size, Members: 2, Lines: 3, First: 13}
	if len(u.Files) != 1 || u.Files[0] != want {
		t.Fatalf("files %+v, want %+v", u.Files, want)
	}
	if !strings.Contains(err.Error(), "sealed up to byte") || !strings.Contains(u.Reason, "not sealed") {
		t.Fatalf("message: %v", err)
	}

	quarantineUnsealed(t, root, keys, u, sealed, before)

	unsealedSegment(t, root, keys, sealed)
}

func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEditBeforeTheSeal: an edited line before the last seal breaks the
// chain; edited and chained again, the seals after it no longer verify,
// and only what the last valid seal covers counts.
func TestEditBeforeTheSeal(t *testing.T) {
	keys, _ := newKeys(t)
	root := t.TempDir()
	s := ledger.Open(root, 0).Sealed(keys.Ledger())
	var tails []ledger.Tail
	var tail ledger.Tail
	for range 4 {
		tail = run(t, s, tail, 3)
		tails = append(tails, tail)
	}
	file := filepath.Join(root, filepath.FromSlash(tail.Segment.Path))
	orig, _ := os.ReadFile(file)

	// Member 3 (seq 7-9) with "ok" made "failed", the chain left alone.
	m3 := gunzip(t, orig[tails[1].Segment.Size:tails[2].Segment.Size])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Replace(m3, []byte(`"status":"ok"`), []byte(`"status":"failed"`), 1))
	zw.Close()
	edited := append(append(append([]byte{}, orig[:tails[1].Segment.Size]...), buf.Bytes()...), orig[tails[2].Segment.Size:]...)
	os.WriteFile(file, edited, 0o644)
	_, _, err := scan(t, root, keys.Ledger())
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || ce.Kind != ledger.ProblemChain || ce.Line != 8 {
		t.Fatalf("edited line: %v", err)
	}

	// Re-chained from member 2 on, each member keeping the seal it had:
	// what a writer who knows the format, but not the key, can do.
	rechain(t, root, orig, tails)
	seqs, got, err := scan(t, root, keys.Ledger())
	var u *ledger.UnsealedError
	if !errors.As(err, &u) || !u.Applied || u.Sealed != tails[0] || got != tails[0] {
		t.Fatalf("re-chained: %v (%+v), tail %+v, want sealed %+v", err, u, got, tails[0])
	}
	if !strings.Contains(u.Reason, "does not verify") || len(u.Files) != 1 || u.Files[0].Members != 3 || u.Files[0].First != 4 {
		t.Fatalf("re-chained: %+v", u)
	}
	sealedPrefix(t, root, keys, u, seqs)
}

// quarantineUnsealed: quarantine keeps the bytes and leaves the sealed
// part, before being the sealed file's bytes.
func quarantineUnsealed(t *testing.T, root string, keys *ledgerkey.Keys, u *ledger.UnsealedError, sealed ledger.Tail, before []byte) {
	t.Helper()
	file := filepath.Join(root, filepath.FromSlash(sealed.Segment.Path))
	after, _ := os.ReadFile(file)
	moved, err := ledger.Quarantine(root, u, ledger.QuarantineDir+"/t1")
	if err != nil {
		t.Fatal(err)
	}
	q := ledger.QuarantineDir + "/t1/" + sealed.Segment.Path
	if fmt.Sprint(moved) != fmt.Sprint([]string{q, sealed.Segment.Path}) {
		t.Fatalf("moved %v", moved)
	}
	kept, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(q)))
	now, _ := os.ReadFile(file)
	if !bytes.Equal(now, before) || !bytes.Equal(kept, after[len(before):]) {
		t.Fatal("quarantine did not move exactly the unsealed bytes")
	}
	if _, got, err := scan(t, root, keys.Ledger()); err != nil || got != sealed {
		t.Fatalf("after quarantine: %+v %v", got, err)
	}

}

// rechain rewrites the ledger from its second member on as new approvals
// by mallory, correctly chained, each member keeping the seal the original
// had at its place.
func rechain(t *testing.T, root string, orig []byte, tails []ledger.Tail) {
	t.Helper()
	file := filepath.Join(root, filepath.FromSlash(tails[len(tails)-1].Segment.Path))
	os.WriteFile(file, orig[:tails[0].Segment.Size], 0o644)
	forged := tails[0]
	for i := 1; i < 4; i++ {
		seal := sealAt(t, orig, tails[i-1].Segment.Size)
		copySeal := &ledger.Seals{Sign: func(string, string) ([]byte, error) { return seal, nil }}
		evs := make([]*ledger.Event, 3)
		for k := range evs {
			at := t0.Add(time.Duration(forged.Seq+int64(k)) * time.Minute)
			evs[k] = &ledger.Event{TS: at, Event: ledger.ApprovalApproved, ScheduleID: "deploy", By: "mallory"}
		}
		var err error
		if forged, err = ledger.Open(root, 0).Sealed(copySeal).Append(forged, forged.Segment, evs); err != nil {
			t.Fatal(err)
		}
	}
}

// unsealedSegment: a new segment written by a writer is unsealed whole.
func unsealedSegment(t *testing.T, root string, keys *ledgerkey.Keys, sealed ledger.Tail) {
	t.Helper()
	var u *ledger.UnsealedError
	small := ledger.Open(root, 1).Sealed(keys.Ledger()) // every append rolls over
	sealed = run(t, small, sealed, 1)
	tail := run(t, ledger.Open(root, 1), sealed, 2)
	_, _, err := scan(t, root, keys.Ledger())
	if !errors.As(err, &u) || len(u.Files) != 1 || u.Files[0].Offset != 0 || u.Files[0].File != tail.Segment.Path || u.Files[0].First != sealed.Seq+1 {
		t.Fatalf("new segment: %v %+v", err, u)
	}
	if _, err := ledger.Quarantine(root, u, ledger.QuarantineDir+"/t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(tail.Segment.Path))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file left with nothing sealed is removed: %v", err)
	}
}

// sealedPrefix: the scan is optimistic (one check, the newest seal, at the
// end): it says so, and a second scan up to the sealed part applies that.
func sealedPrefix(t *testing.T, root string, keys *ledgerkey.Keys, u *ledger.UnsealedError, seqs []int64) {
	t.Helper()
	var ce *ledger.CorruptError
	if len(seqs) != 12 {
		t.Fatalf("seqs %v", seqs)
	}
	segs, _ := ledger.Open(root, 0).Segments()
	seqs = nil
	if _, err := ledger.Scan(root, segs, ledger.ScanOptions{Verify: true, Seals: keys.Ledger(), Until: u.Sealed.Seq}, func(e *ledger.Event) error {
		seqs = append(seqs, e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	equalSeqs(t, seqs, seqsTo(3))
	if _, err := ledger.Verify(root, segs, keys.Ledger()); !errors.As(err, &ce) || ce.Kind != ledger.ProblemSeal || ce.Line != 4 {
		t.Fatalf("ledger verify: %v", err)
	}
}

// sealAt is the seal in the header of the member starting at off.
func sealAt(t testing.TB, data []byte, off int64) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data[off:]))
	if err != nil {
		t.Fatal(err)
	}
	x := zr.Header.Extra
	if len(x) < 4 || x[0] != 'A' || x[1] != 'S' {
		t.Fatalf("no seal at %d", off)
	}
	return x[4:]
}

// TestSealByAnotherKey: a newest seal made with a key the policies do not
// list is not damage to cut; it names the key.
func TestSealByAnotherKey(t *testing.T) {
	keys, _ := newKeys(t)
	other, _ := newKeys(t)
	root := t.TempDir()
	tail := run(t, ledger.Open(root, 0).Sealed(keys.Ledger()), ledger.Tail{}, 2)
	run(t, ledger.Open(root, 0).Sealed(other.Ledger()), tail, 2)
	_, _, err := scan(t, root, keys.Ledger())
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || ce.Kind != ledger.ProblemSeal || !errors.Is(err, ce) || !strings.Contains(err.Error(), other.Fingerprints()[0]) {
		t.Fatalf("err = %v", err)
	}
	segs, _ := ledger.Open(root, 0).Segments()
	if _, err := ledger.Verify(root, segs, keys.Ledger()); !errors.As(err, &ce) || ce.Kind != ledger.ProblemSeal || ce.Line != 3 {
		t.Fatalf("ledger verify: %v", err)
	}
}

// TestSealedAfterUnsealedHistory: lines from before the ledger was sealed
// count once a seal follows them; ledger verify wants every member after
// the first sealed one sealed.
func TestSealedAfterUnsealedHistory(t *testing.T) {
	keys, _ := newKeys(t)
	root := t.TempDir()
	tail := run(t, ledger.Open(root, 0), ledger.Tail{}, 3)
	tail = run(t, ledger.Open(root, 0), tail, 3)
	if seqs, got, err := scan(t, root, keys.Ledger()); err != nil || got.Seal != "" || len(seqs) != 6 {
		t.Fatalf("history from before the keys: %v %+v %v", seqs, got, err)
	}
	tail = run(t, ledger.Open(root, 0).Sealed(keys.Ledger()), tail, 2)
	seqs, got, err := scan(t, root, keys.Ledger())
	if err != nil || got != tail {
		t.Fatal(err)
	}
	equalSeqs(t, seqs, seqsTo(8))
	tail = run(t, ledger.Open(root, 0), tail, 2)                // a writer
	run(t, ledger.Open(root, 0).Sealed(keys.Ledger()), tail, 1) // then astra, which seals on top
	segs, _ := ledger.Open(root, 0).Segments()
	_, err = ledger.Verify(root, segs, keys.Ledger())
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || ce.Kind != ledger.ProblemSeal || ce.Line != 9 || !strings.Contains(ce.Msg, "not sealed") {
		t.Fatalf("ledger verify: %v", err)
	}
}

// TestSealedRepair: a torn sealed member is cut whole; the sealed members
// before it stay as they were, and nothing is sealed again.
func TestSealedRepair(t *testing.T) {
	keys, _ := newKeys(t)
	root := t.TempDir()
	s := ledger.Open(root, 0).Sealed(keys.Ledger())
	tail := run(t, s, ledger.Tail{}, 3)
	sealed := tail
	tail = run(t, s, tail, 3)
	file := filepath.Join(root, filepath.FromSlash(tail.Segment.Path))
	data, _ := os.ReadFile(file)
	os.WriteFile(file, data[:len(data)-7], 0o644)
	segs, _ := s.Segments()
	_, err := ledger.Verify(root, segs, keys.Ledger())
	var ce *ledger.CorruptError
	if !errors.As(err, &ce) || !ce.Repairable() {
		t.Fatalf("torn tail: %v", err)
	}
	rep, err := s.Repair(segs, ce)
	if err != nil || rep.Salvaged != 0 || rep.Offset != sealed.Segment.Size {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	now, _ := os.ReadFile(file)
	if !bytes.Equal(now, data[:sealed.Segment.Size]) {
		t.Fatal("the sealed members changed")
	}
	if _, got, err := scan(t, root, keys.Ledger()); err != nil || got != sealed {
		t.Fatalf("after repair: %+v %v", got, err)
	}
}
