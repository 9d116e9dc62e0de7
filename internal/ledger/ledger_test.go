package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/money"
	"github.com/klauspost/compress/gzip"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// sample is an event with every field set, awkward strings included.
func sample(i int) *Event {
	slot := t0.Add(time.Duration(i) * time.Hour)
	return &Event{
		TS: t0.Add(time.Duration(i) * time.Minute), Clock: ClockTest, Event: RunCompleted, ScheduleID: "sch_1234abcd", Slot: slot,
		IdempotencyKey: "sch_1234abcd@" + slot.Format(time.RFC3339), Actor: "n8n_workflow_7", Tenant: "zora",
		Tool: "deploy_to_vercel", Tier: 2, Autonomy: "L2", Status: "ok", Reason: ReasonBudgetExceeded, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Mode: ModeScheduled, Attempt: 2, Usage: Usage{Tokens: 1200, Cost: 12_500, WallClockMS: 2300, ToolCalls: 3},
		Output: "line one\nquote \" backslash \\ tab\t <html> & ünïcødé \u2028 \x01 end", Error: "exit status 1",
		PR: 42, By: "octocat", ExpiresAt: slot.Add(24 * time.Hour), PayloadHash: "sha256:abcd", Comment: "freeze \"until\" Monday\n", RetryAt: slot.Add(5 * time.Second),
		Runner: "gh-123-1", Period: "day", Threshold: 0.8, Spent: 4_250_000, Limit: 5 * money.Dollar, Detail: json.RawMessage(`{"a": [1, 2, {"b": null}]}`),
		Prev: strings.Repeat("ab", 32),
	}
}

func equalEvents(t *testing.T, got, want *Event) {
	t.Helper()
	g, w := *got, *want
	for _, p := range []*[2]*time.Time{{&g.TS, &w.TS}, {&g.Slot, &w.Slot}, {&g.ExpiresAt, &w.ExpiresAt}, {&g.RetryAt, &w.RetryAt}} {
		if !p[0].Equal(*p[1]) {
			t.Fatalf("time differs: %v vs %v", *p[0], *p[1])
		}
		*p[0], *p[1] = time.Time{}, time.Time{}
	}
	for _, d := range []*json.RawMessage{&g.Detail, &w.Detail} {
		var buf bytes.Buffer
		if len(*d) > 0 && json.Compact(&buf, *d) == nil && buf.String() != "null" {
			*d = buf.Bytes()
		} else {
			*d = nil
		}
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("events differ:\n got  %+v\n want %+v", g, w)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for i := range 50 {
		e := sample(i)
		if i%3 == 0 {
			e.Usage, e.Detail, e.Slot, e.Tenant, e.Clock = Usage{}, nil, time.Time{}, "", ""
		}
		line := AppendJSON(nil, e)
		if !json.Valid(line) {
			t.Fatalf("invalid JSON: %s", line)
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Fatalf("newline inside a line: %s", line)
		}
		// The control character and invalid bytes are escaped; the rest
		// must survive exactly.
		want := *e
		var got Event
		if err := Unmarshal(line, &got); err != nil {
			t.Fatalf("decode %s: %v", line, err)
		}
		equalEvents(t, &got, &want)
		var std Event
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatal(err)
		}
		equalEvents(t, &got, &std)
		if again := AppendJSON(nil, &got); !bytes.Equal(again, line) {
			t.Fatalf("encoding is not stable:\n%s\n%s", line, again)
		}
	}
}

// TestCodecAgreesWithEncodingJSON: lines not written by astra (hand-edited,
// other tools) decode as encoding/json reads them, or are refused.
func TestCodecAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"seq":1,"ts":"2026-11-22T09:00:00Z","event":"run.completed","prev":""}`,
		` { "seq" : 2 , "ts" : "2026-11-22T09:00:00+02:00", "slot": null, "unknown": {"x": [true, false, null, 1.5e3]}, "prev": "x" } `,
		`{"seq":3,"output":"\u00e9\ud83d\ude00 \"q\" \\ \/","usage":{"tokens":5,"cost_usd":1e-7,"extra":1},"detail":{"k":"v"}}`,
		`{"seq":4,"tier":null,"event":null,"detail":null,"usage":null}`,
		`{"seq":5,"threshold":0.5,"spent_usd":-0,"limit_usd":12345678.901234}`,
		`{"seq":6,"ts":"2026-11-22T09:00:00.123456789Z"}`,
		`{"seq":7,"clock":"test","ts":"2026-11-22T09:00:00Z"}`, `{"seq":8,"clock":null}`,
		`{}`,
	}
	for _, l := range lines {
		var a, b Event
		errA := Unmarshal([]byte(l), &a)
		errB := json.Unmarshal([]byte(l), &b)
		if errA != nil || errB != nil {
			t.Fatalf("%s: ours %v, encoding/json %v", l, errA, errB)
		}
		equalEvents(t, &a, &b)
	}
	bad := []string{
		``, `[]`, `{"seq":1`, `{"seq":1,}`, `{"seq":01}`, `{"seq":1.5}`, `{"seq":"1"}`, `{"seq":1} x`,
		`{"output":"a` + "\x01" + `b"}`, `{"SEQ":1}`, `{"Clock":"test"}`, `{"clock":1}`, `{"ts":"yesterday"}`, `{"x":tru}`, `{"usage":{"Tokens":1}}`,
		`{"limit_usd":12345678901234567890}`, `{"usage":{"cost_usd":"1"}}`,
	}
	for _, l := range bad {
		var e Event
		if err := Unmarshal([]byte(l), &e); err == nil {
			t.Errorf("%q accepted", l)
		}
	}
}

// FuzzDecode: whatever the decoder accepts, encoding/json accepts too and
// reads the same event.
func FuzzDecode(f *testing.F) {
	f.Add(AppendJSON(nil, sample(1)))
	f.Add([]byte(`{"seq":2,"usage":{"tokens":1},"detail":[1,{"a":"\u0041"}],"x":null}`))
	f.Add([]byte(`{"ts":"2026-02-30T00:00:00Z","output":"\ud800"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var ours Event
		if Unmarshal(line, &ours) != nil {
			return
		}
		var std Event
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatalf("we accepted %q, encoding/json did not: %v", line, err)
		}
		equalEvents(t, &ours, &std)
	})
}

func appendN(t *testing.T, s *Store, tail Tail, now time.Time, n int) Tail {
	t.Helper()
	seg, _ := s.Target(tail, now)
	var evs []*Event
	for i := range n {
		e := sample(int(tail.Seq) + i)
		e.TS = now
		evs = append(evs, e)
	}
	tail, err := s.Append(tail, seg, evs)
	if err != nil {
		t.Fatal(err)
	}
	return tail
}

// fiveAppends appends five runs of seven events to a new ledger and
// returns its root, its one file and its tail.
func fiveAppends(t *testing.T) (string, Segment, Tail) {
	t.Helper()
	root := t.TempDir()
	s := Open(root, 0)
	var tail Tail
	for range 5 {
		tail = appendN(t, s, tail, t0, 7)
	}
	segs, err := s.Segments()
	if err != nil || len(segs) != 1 || segs[0].Path != "var/schedules/2026-11.ndjson.gz" {
		t.Fatalf("segments %v %v", segs, err)
	}
	return root, segs[0], tail
}

// Each append is a gzip member of its own; reading the file gives every
// event, in order, and the tail the appends returned.
func TestAppendMembers(t *testing.T) {
	root, seg, tail := fiveAppends(t)
	data, err := os.ReadFile(filepath.Join(root, seg.Path))
	if err != nil {
		t.Fatal(err)
	}
	if ms := members(data); len(ms) != 5 {
		t.Fatalf("want 5 gzip members, got %d", len(ms))
	}
	evs, rt, err := ReadAll(root, []Segment{seg})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 35 || rt.Seq != 35 || rt.Hash != tail.Hash {
		t.Fatalf("read %d events, tail %+v, want 35 and %s", len(evs), rt, tail.Hash)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// zcat reads all members: the same lines, chained; Cat prints what zcat
// does.
func TestZcatReadsTheMembers(t *testing.T) {
	root, seg, _ := fiveAppends(t)
	out, err := exec.Command("zcat", filepath.Join(root, seg.Path)).Output()
	if err != nil {
		t.Fatalf("zcat: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 35 {
		t.Fatalf("zcat printed %d lines", len(lines))
	}
	prev := ""
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Prev != prev {
			t.Fatalf("line %d: prev %q, want %q", i+1, e.Prev, prev)
		}
		prev = lineHash([]byte(l))
	}
	var cat bytes.Buffer
	if err := Cat(&cat, filepath.Join(root, seg.Path)); err != nil || cat.String() != string(out) {
		t.Fatalf("Cat differs from zcat: %v", err)
	}
}

func TestSegmentsRollOver(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 2048) // tiny segments
	var tail Tail
	for range 12 {
		tail = appendN(t, s, tail, t0, 10)
	}
	// A new month starts a new file whatever the size.
	dec := time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)
	if _, newMonth := s.Target(tail, dec); !newMonth {
		t.Fatal("month change not reported")
	}
	tail = appendN(t, s, tail, dec, 3)
	segs, _ := s.Segments()
	if len(segs) < 4 {
		t.Fatalf("want several segments, got %v", segs)
	}
	if segs[1].Path != "var/schedules/2026-11.001.ndjson.gz" || segs[len(segs)-1].Path != "var/schedules/2026-12.ndjson.gz" {
		t.Fatalf("segment names: %v", segs)
	}
	for _, sg := range segs[:len(segs)-1] {
		// A segment is closed once it reaches the size; members are small.
		if sg.Size > 2048+1024 {
			t.Fatalf("%s is %d bytes", sg.Path, sg.Size)
		}
	}
	st, err := Verify(root, segs)
	if err != nil || st.Events != 123 || st.Tail.Hash != tail.Hash {
		t.Fatalf("verify: %+v %v", st, err)
	}
	// Reading only the last month continues from the earlier tail.
	before, err := Scan(root, segs[:len(segs)-1], ScanOptions{}, func(*Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if _, err := Scan(root, segs[len(segs)-1:], ScanOptions{Verify: true, After: before}, func(*Event) error { n++; return nil }); err != nil || n != 3 {
		t.Fatalf("scan of the last month: %d events, %v", n, err)
	}
}

// rewrite replaces a file with one gzip member of the given lines.
func rewrite(t *testing.T, file string, lines [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(append(bytes.Join(lines, []byte{'\n'}), '\n'))
	zw.Close()
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTamperNamesTheLine(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(lines [][]byte) [][]byte
		line     int
		kind, in string
	}{
		{"edit one byte of a value", func(l [][]byte) [][]byte {
			l[9] = bytes.Replace(l[9], []byte(`"status":"ok"`), []byte(`"status":"ko"`), 1)
			return l
		}, 10, ProblemChain, "this line was changed"},
		{"edit a prev", func(l [][]byte) [][]byte {
			i := bytes.Index(l[9], []byte(`"prev":"`)) + 9
			l[9][i] ^= 1
			return l
		}, 10, ProblemChain, "neither its prev"},
		{"break the JSON", func(l [][]byte) [][]byte { l[4][0] = '['; return l }, 5, ProblemJSON, ""},
		{"remove a line", func(l [][]byte) [][]byte { return append(l[:6], l[7:]...) }, 7, ProblemSeq, "does not follow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			s := Open(root, 0)
			var tail Tail
			for range 4 {
				tail = appendN(t, s, tail, t0, 5)
			}
			segs, _ := s.Segments()
			file := filepath.Join(root, segs[0].Path)
			lines, err := fileLines("", file)
			if err != nil {
				t.Fatal(err)
			}
			rewrite(t, file, c.edit(lines))
			segs, _ = s.Segments()
			_, err = Verify(root, segs)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("verify passed a tampered ledger: %v", err)
			}
			if ce.File != segs[0].Path || ce.Line != c.line || ce.Kind != c.kind || !strings.Contains(ce.Msg, c.in) {
				t.Fatalf("got %v, want %s:%d %s containing %q", ce, segs[0].Path, c.line, c.kind, c.in)
			}
		})
	}
}

func TestTruncatedMemberRepair(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	var tail Tail
	for range 3 {
		tail = appendN(t, s, tail, t0, 4)
	}
	segs, _ := s.Segments()
	file := filepath.Join(root, segs[0].Path)
	// A run killed while writing: the last member is cut short.
	data, _ := os.ReadFile(file)
	ms := members(data)
	good := ms[len(ms)-1].start
	for _, cut := range []int64{good + 5, good + (int64(len(data))-good)/2, int64(len(data)) - 3} {
		t.Run(fmt.Sprint(cut-good), func(t *testing.T) {
			if err := os.WriteFile(file, data[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			segs, _ := s.Segments()
			_, err := Verify(root, segs)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Kind != ProblemTruncated {
				t.Fatalf("truncation not reported: %v", err)
			}
			// Scan still hands over every event before the broken member.
			n := 0
			Scan(root, segs, ScanOptions{}, func(*Event) error { n++; return nil })
			if n < 8 {
				t.Fatalf("only %d events before the cut, want at least 8", n)
			}
			rep, err := s.Repair(segs, ce)
			if err != nil {
				t.Fatal(err)
			}
			segs, _ = s.Segments()
			st, err := Verify(root, segs)
			if err != nil {
				t.Fatalf("still broken after repair: %v", err)
			}
			if st.Events != int64(8+rep.Salvaged) || rep.Offset != good || rep.Dropped != cut-good {
				t.Fatalf("repair %+v left %d events", rep, st.Events)
			}
			// The chain goes on from the repaired tail.
			tail := appendN(t, s, st.Tail, t0, 2)
			segs, _ = s.Segments()
			if st, err := Verify(root, segs); err != nil || st.Tail.Hash != tail.Hash {
				t.Fatalf("append after repair: %v", err)
			}
		})
	}
}

func TestRepairRefusesTheMiddle(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	var tail Tail
	for range 3 {
		tail = appendN(t, s, tail, t0, 4)
	}
	segs, _ := s.Segments()
	file := filepath.Join(root, segs[0].Path)
	lines, _ := fileLines("", file)
	lines[2] = bytes.Replace(lines[2], []byte(`"ok"`), []byte(`"OK"`), 1)
	rewrite(t, file, lines)
	segs, _ = s.Segments()
	_, err := Verify(root, segs)
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatal("tamper not found")
	}
	if _, err := s.Repair(segs, ce); !errors.Is(err, ErrNotRepairable) {
		t.Fatalf("repair of a tampered middle line: %v", err)
	}
}

func TestApprovalLogIsOneFile(t *testing.T) {
	root := t.TempDir()
	s := OpenApprovalLog(root)
	var tail Tail
	tail = appendN(t, s, tail, t0, 1)
	appendN(t, s, tail, t0.AddDate(0, 2, 0), 1)
	segs, _ := s.Segments()
	if len(segs) != 1 || segs[0].Path != "var/approvals/approved.ndjson.gz" {
		t.Fatalf("%v", segs)
	}
	if st, err := Verify(root, segs); err != nil || st.Events != 2 {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestScanRandomLongLines(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	r := rand.New(rand.NewPCG(3, 4))
	var tail Tail
	var want []string
	for range 20 {
		seg, _ := s.Target(tail, t0)
		var evs []*Event
		for range 1 + r.IntN(5) {
			e := sample(r.IntN(100))
			e.Output = strings.Repeat("x", r.IntN(400_000)) // checkpoints can be long lines
			evs = append(evs, e)
			want = append(want, e.Output)
		}
		var err error
		if tail, err = s.Append(tail, seg, evs); err != nil {
			t.Fatal(err)
		}
	}
	segs, _ := s.Segments()
	evs, _, err := ReadAll(root, segs)
	if err != nil || len(evs) != len(want) {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i := range evs {
		if evs[i].Output != want[i] {
			t.Fatalf("event %d output differs", i)
		}
	}
}

// FuzzScan: any file content gives events and a *CorruptError, never a
// panic or another error, and every event handed over is in seq order.
func FuzzScan(f *testing.F) {
	root := f.TempDir()
	s := Open(root, 0)
	var tail Tail
	for range 2 {
		seg, _ := s.Target(tail, t0)
		var err error
		if tail, err = s.Append(tail, seg, []*Event{sample(1), sample(2)}); err != nil {
			f.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, tail.Segment.Path))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-7])
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		seg := Segment{Path: "var/schedules/2026-11.ndjson.gz", Month: "2026-11", Size: int64(len(content))}
		if err := os.MkdirAll(filepath.Join(dir, "var/schedules"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, seg.Path), content, 0o644); err != nil {
			t.Fatal(err)
		}
		var last int64
		_, err := Scan(dir, []Segment{seg}, ScanOptions{Verify: true}, func(e *Event) error {
			if last != 0 && e.Seq != last+1 {
				t.Fatalf("seq %d after %d", e.Seq, last)
			}
			last = e.Seq
			return nil
		})
		var ce *CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("error is not a *CorruptError: %T %v", err, err)
		}
	})
}

// TestSpecialMatchesBytes: the word test agrees with a byte-by-byte check.
func TestSpecialMatchesBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		var b [8]byte
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
			if r.IntN(20) == 0 {
				b[i] = byte(r.IntN(256))
			}
		}
		want := false
		for _, c := range b {
			want = want || c == '"' || c == '\\' || c < 0x20 || c > 0x7f
		}
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 | uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if special(w) != want {
			t.Fatalf("special(%q) = %v", b, !want)
		}
	}
}

// TestAppendCutsForeignBytes: bytes someone else appended after astra's
// last member are overwritten and cut by the next append, and reported;
// the log reads as astra wrote it. A file shorter than astra wrote it is
// refused.
func TestAppendCutsForeignBytes(t *testing.T) {
	root := t.TempDir()
	s := Open(root, 0)
	var cuts []int64
	s.Observe(func(_ string, _ int64, _ []byte, cut int64) { cuts = append(cuts, cut) })
	tail := appendN(t, s, Tail{}, t0, 3)
	file := filepath.Join(root, tail.Segment.Path)
	for _, junk := range []string{"x", strings.Repeat("garbage", 1000)} {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(junk)
		f.Close()
		tail = appendN(t, s, tail, t0, 2)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != tail.Segment.Size {
		t.Fatalf("file is %v bytes, astra wrote %d (%v)", fi.Size(), tail.Segment.Size, err)
	}
	if evs, rt, err := ReadAll(root, []Segment{tail.Segment}); err != nil || len(evs) != 7 || rt.Hash != tail.Hash {
		t.Fatalf("read %d events (%v), want 7", len(evs), err)
	}
	if want := []int64{0, 1, 7000}; !slices.Equal(cuts, want) {
		t.Fatalf("cuts reported %v, want %v", cuts, want)
	}
	if err := os.Truncate(file, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(tail, tail.Segment, []*Event{{Event: RunCompleted, TS: t0}}); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Fatalf("append to a cut file: %v", err)
	}
}
