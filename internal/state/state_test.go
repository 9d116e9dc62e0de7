package state

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
	"github.com/astra-gitops/astra/internal/money"
)

// naive recomputes what replay should know with encoding/json and plain
// loops, sharing no code with State.Apply.
type naive struct {
	lastSlot    map[string]time.Time
	consumed    map[string]int // successful tier>=1 runs on the day of now
	open        map[string]string
	dayUSD      money.USD
	monthUSD    money.USD
	actorRuns   map[string]int // claims in the last hour before now
	approvals   map[string]int // open requests' PR by schedule
	deadLetters map[string]bool
}

func computeNaively(t *testing.T, root string, now time.Time) naive {
	t.Helper()
	n := naive{lastSlot: map[string]time.Time{}, consumed: map[string]int{}, open: map[string]string{}, actorRuns: map[string]int{}, approvals: map[string]int{}, deadLetters: map[string]bool{}}
	eachLine(t, root, func(e map[string]any) { n.apply(e, now) })
	return n
}

// eachLine calls fn with every line of the ledger under root, in file
// order, decoded by encoding/json.
func eachLine(t *testing.T, root string, fn func(map[string]any)) {
	t.Helper()
	segs, err := ledger.Open(root, 0).Segments() // file order only
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range segs {
		f, err := os.Open(filepath.Join(root, seg.Path))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var e map[string]any
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			fn(e)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

func (n *naive) apply(e map[string]any, now time.Time) {
	str := func(k string) string { s, _ := e[k].(string); return s }
	num := func(k string) float64 { f, _ := e[k].(float64); return f }
	ts, _ := time.Parse(time.RFC3339, str("ts"))
	slot, _ := time.Parse(time.RFC3339, str("slot"))
	id, key := str("schedule_id"), str("idempotency_key")
	if str("scheduled_vs_manual") == "scheduled" && key == id+"@"+slot.Format(time.RFC3339) && slot.After(n.lastSlot[id]) {
		n.lastSlot[id] = slot
	}
	switch str("event") {
	case "run.claimed":
		n.open[key] = "claimed"
		if ts.After(now.Add(-time.Hour)) {
			n.actorRuns[str("actor")]++
		}
	case "run.completed", "run.failed":
		delete(n.open, key)
		if str("event") == "run.completed" && num("tier") >= 1 && ts.Format("2006-01-02") == now.Format("2006-01-02") {
			n.consumed[id]++
		}
		n.spend(e, ts, now)
	case "run.retry_scheduled":
		n.open[key] = "retry"
	case "run.skipped":
		delete(n.open, key)
	case "run.dead_lettered":
		delete(n.open, key)
		n.deadLetters[key] = true
	case "approval.requested":
		n.approvals[id] = int(num("pr"))
	}
}

func (n *naive) spend(e map[string]any, ts, now time.Time) {
	u, ok := e["usage"].(map[string]any)
	if !ok || ts.Format("2006-01") != now.Format("2006-01") {
		return
	}
	f, _ := u["cost_usd"].(float64)
	c, _ := money.FromFloat(f) // the naive side reads with encoding/json
	n.monthUSD += c
	if ts.Format("2006-01-02") == now.Format("2006-01-02") {
		n.dayUSD += c
	}
}

func TestReplayAgreesWithNaiveComputation(t *testing.T) {
	root := t.TempDir()
	tail, err := ledgertest.Generate(root, ledgertest.Options{Schedules: 300, Events: 60_000, SegmentSize: 256 << 10, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	now := tail.TS.Add(time.Minute)
	st, rt, err := Replay(ledger.Open(root, 256<<10), now)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Hash != tail.Hash || rt.Seq != tail.Seq {
		t.Fatalf("replay tail %+v, generator tail %+v", rt, tail)
	}
	n := computeNaively(t, root, now)
	if len(n.lastSlot) < 250 {
		t.Fatalf("generated data too thin: %d schedules", len(n.lastSlot))
	}
	n.compare(t, st, now)
}

// compare reports where st disagrees with the naive computation: slots,
// counts, open runs and spend here.
func (n *naive) compare(t *testing.T, st *State, now time.Time) {
	t.Helper()
	for id, want := range n.lastSlot {
		if got := st.Schedules[id].LastSlot; !got.Equal(want) {
			t.Errorf("%s: last slot %s, want %s", id, got, want)
		}
	}
	for id := range st.Schedules {
		if got, want := st.ConsumedToday(id)-openClaimsToday(st, id), n.consumed[id]; got != want {
			t.Errorf("%s: consumed today %d, want %d", id, got, want)
		}
	}
	if len(st.Open) != len(n.open) {
		t.Errorf("open slots: %d, want %d", len(st.Open), len(n.open))
	}
	for k, status := range n.open {
		if o := st.Open[k]; o == nil || o.Status != status {
			t.Errorf("open %s: %+v, want %s", k, o, status)
		}
	}
	if st.Spend.Day != n.dayUSD || st.Spend.Month != n.monthUSD {
		t.Errorf("spend day %v month %v, want %v %v", st.Spend.Day, st.Spend.Month, n.dayUSD, n.monthUSD)
	}
	n.compareRest(t, st, now)
}

// compareRest: actors' runs, approvals and dead letters.
func (n *naive) compareRest(t *testing.T, st *State, now time.Time) {
	t.Helper()
	for a, want := range n.actorRuns {
		if got := st.RunsSince(a, now.Add(-time.Hour)); got != want {
			t.Errorf("actor %s: %d runs in the last hour, want %d", a, got, want)
		}
	}
	for id, pr := range n.approvals {
		if a := st.Approvals[id]; a == nil || a.PR != pr {
			t.Errorf("approval of %s: %+v, want PR %d", id, a, pr)
		}
	}
	if len(n.deadLetters) == 0 || len(st.DeadLetters) != len(n.deadLetters) {
		t.Errorf("dead letters: %d, want %d (and some)", len(st.DeadLetters), len(n.deadLetters))
	}
	for k := range n.deadLetters {
		if st.DeadLetters[k] == nil {
			t.Errorf("dead letter %s missing", k)
		}
	}
}

func openClaimsToday(st *State, id string) int {
	n := 0
	for _, o := range st.Open {
		if o.ScheduleID == id && o.Status == OpenClaimed && o.Tier >= 1 && Day(o.ClaimedAt) == Day(st.Now) {
			n++
		}
	}
	return n
}

func run(id string, slot time.Time, kind ledger.Kind, tier int) *ledger.Event {
	return &ledger.Event{Event: kind, ScheduleID: id, Slot: slot, IdempotencyKey: ledger.SlotKey(id, slot), Actor: "astra",
		Tool: "t", Tier: tier, Status: "ok", Mode: ledger.ModeScheduled, Usage: ledger.Usage{Cost: money.Dollar / 4}}
}

// TestCheckpointBoundsReplay: the first event of a month is a checkpoint,
// and replay of the new month alone knows what the old month taught it.
func TestCheckpointBoundsReplay(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	nov := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	clock := nov
	j := NewJournal(store, New(nov), ledger.Tail{}, func() time.Time { return clock }, false)
	if err := j.Record(
		&ledger.Event{Event: ledger.ScheduleCreated, ScheduleID: "a", PayloadHash: "h1", Mode: ledger.ModeScheduled},
		run("a", nov, ledger.RunClaimed, 1),
		run("a", nov, ledger.RunCompleted, 1),
		&ledger.Event{Event: ledger.RunDeadLettered, ScheduleID: "b", Slot: nov, IdempotencyKey: ledger.SlotKey("b", nov), Mode: ledger.ModeScheduled, Attempt: 3, Error: "boom"},
	); err != nil {
		t.Fatal(err)
	}
	segs := intoDecember(t, j, store, &clock)
	first, err := ledger.First(root, segs[1])
	if err != nil || first.Event != ledger.LedgerCheckpoint {
		t.Fatalf("December does not open with a checkpoint: %+v %v", first, err)
	}
	if _, err := ledger.Verify(root, segs); err != nil {
		t.Fatalf("chain across months: %v", err)
	}
	// Break November: replay must not need it.
	if err := os.WriteFile(filepath.Join(root, segs[0].Path), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, err := Replay(store, clock)
	if err != nil {
		t.Fatalf("replay read the old month: %v", err)
	}
	if st.Known["a"] != "h1" || st.Schedules["a"].LastSlot.IsZero() || len(st.DeadLetters) != 1 || len(st.Open) != 1 {
		t.Fatalf("checkpoint lost state: known %v schedules %+v dead %d open %d", st.Known, st.Schedules["a"], len(st.DeadLetters), len(st.Open))
	}
	if st.Spend.Month != 0 {
		t.Fatalf("November's spend counted in December: %v", st.Spend.Month)
	}
}

// recordDeadLetters records 12,000 dead letters with long errors before
// at (~7 MB of state: a checkpoint of several parts), then extra.
func recordDeadLetters(t *testing.T, j *Journal, at time.Time, extra ...*ledger.Event) {
	t.Helper()
	why := strings.Repeat("the tool said something long about why it failed; ", 12)
	var evs []*ledger.Event
	for i := range 12_000 {
		slot := at.Add(-time.Duration(i) * time.Minute)
		e := run(fmt.Sprintf("s%d", i%500), slot, ledger.RunDeadLettered, 1)
		e.Attempt, e.Error = 3, why
		evs = append(evs, e)
	}
	if err := j.Record(append(evs, extra...)...); err != nil {
		t.Fatal(err)
	}
}

// intoDecember records a claim on 1 December, which opens the month's
// file with a checkpoint, and returns the two months' files.
func intoDecember(t *testing.T, j *Journal, store *ledger.Store, clock *time.Time) []ledger.Segment {
	t.Helper()
	*clock = time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)
	j.State().Now = *clock
	if err := j.Record(run("a", clock.Truncate(time.Hour), ledger.RunClaimed, 1)); err != nil {
		t.Fatal(err)
	}
	segs, _ := store.Segments()
	if len(segs) != 2 {
		t.Fatalf("segments %v", segs)
	}
	return segs
}

// TestPerDayBudgetResets: the per-day run budget: consumed counts successful
// tier-1 runs of the UTC day, and resets when the date changes.
func TestPerDayBudgetResets(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	st := New(day.Add(20 * time.Hour))
	for h := range 4 {
		slot := day.Add(time.Duration(h*4) * time.Hour)
		e := run("a", slot, ledger.RunCompleted, 1)
		e.TS = slot
		st.Apply(e)
	}
	failed := run("a", day.Add(17*time.Hour), ledger.RunFailed, 1)
	failed.TS = day.Add(17 * time.Hour)
	st.Apply(failed)
	if got := st.ConsumedToday("a"); got != 4 {
		t.Fatalf("consumed %d, want 4 (failures do not count)", got)
	}
	st.Now = day.Add(24 * time.Hour)
	if got := st.ConsumedToday("a"); got != 0 {
		t.Fatalf("consumed %d after midnight UTC, want 0", got)
	}
}

func TestDryJournalWritesNothing(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	j := NewJournal(ledger.Open(root, 0), New(now), ledger.Tail{}, func() time.Time { return now }, true)
	if err := j.Record(run("a", now, ledger.RunClaimed, 0)); err != nil {
		t.Fatal(err)
	}
	if len(j.State().Open) != 1 {
		t.Fatal("dry journal did not apply the event")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("dry journal wrote %v", entries)
	}
}

// TestCheckpointOfAnyState: dead letters pile up until someone releases
// them, so what a month carries forward can outgrow a ledger line. The
// checkpoint is then spread over events of bounded size, and replay of
// the new month alone rebuilds the state the old month left.
func TestCheckpointOfAnyState(t *testing.T) {
	root := t.TempDir()
	store := ledger.Open(root, 0)
	nov := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	clock := nov
	j := NewJournal(store, New(nov), ledger.Tail{}, func() time.Time { return clock }, false)
	recordDeadLetters(t, j, nov)
	segs := intoDecember(t, j, store, &clock)
	parts := 0
	if _, err := ledger.Scan(root, segs[1:], ledger.ScanOptions{Verify: true}, func(e *ledger.Event) error {
		if e.Event == ledger.LedgerCheckpoint {
			parts++
			if len(e.Detail) > checkpointPart {
				t.Errorf("checkpoint part %d holds %d bytes", parts, len(e.Detail))
			}
			if (e.Status == ledger.StatusContinued) != (parts > 1) {
				t.Errorf("checkpoint part %d has status %s", parts, e.Status)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if parts < 5 {
		t.Fatalf("%d checkpoint events for ~7 MB", parts)
	}
	// Break November: replay must not need it.
	if err := os.WriteFile(filepath.Join(root, segs[0].Path), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _, err := ReplayEach(store, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.DeadLetters) != 12_000 || len(st.Open) != 1 || st.Events != parts+1 {
		t.Fatalf("replay of December: %d dead letters, %d open, %d events", len(st.DeadLetters), len(st.Open), st.Events)
	}
	if d := diffLines(observe(st), observe(j.State())); d != "" {
		t.Fatal(d)
	}
}

// TestCheckpointPartsWithEscapedKeys: a part is sized as JSON writes it,
// where a free-text idempotency key's '<' takes six bytes: no part may
// outgrow its bound (and with it a ledger line).
func TestCheckpointPartsWithEscapedKeys(t *testing.T) {
	snap := emptySnapshot()
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i := range 1500 {
		snap.Done[fmt.Sprintf("s@event:e:%d%s", i, strings.Repeat("<", 1000))] = at
	}
	parts := splitSnapshot(&snap, checkpointPart)
	for i, p := range parts {
		if len(p) > checkpointPart {
			t.Fatalf("part %d of %d is %d bytes, over %d", i, len(parts), len(p), checkpointPart)
		}
	}
}

// Spend saturates: runs that each record a billion dollars, or tokens near
// the int64 limit, leave the day's spend at its bound, never negative
// ("money left"), and the snapshot of that state reads back.
func TestSpendSaturates(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	st := New(t0)
	for i := range 18_446 {
		e := run("big", t0, ledger.RunFailed, 0)
		e.IdempotencyKey, e.TS = fmt.Sprintf("big@%d", i), t0
		e.Usage = ledger.Usage{Tokens: math.MaxInt64 - 1, Cost: money.Max}
		st.Apply(e)
	}
	if st.Spend.Day != money.Max || st.Spend.Month != money.Max || st.Spend.DayTokens != ledger.MaxCount || st.DaySpend[Day(t0)].USD != money.Max {
		t.Fatalf("spend %+v, day %+v", st.Spend, st.DaySpend[Day(t0)])
	}
}
