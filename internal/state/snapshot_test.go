package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/money"
)

// notStored are State's fields a snapshot does not hold, and why: views at
// Now and indexes that view() rebuilds from what is stored. A field added
// to State is stored when it is exported; an unexported one fails
// TestSnapshotCoversState until it is listed here (and rebuilt in view) or
// exported.
var notStored = map[string]string{
	"Now":           "the time the state is seen from; set by view",
	"Spend":         "view of DaySpend and MonthSpend at Now",
	"Pauses":        "view of Paused at Now",
	"dayIdx":        "cache",
	"dayStr":        "cache",
	"claims":        "index of Open, rebuilt by view",
	"reservedDay":   "index of Open, rebuilt by view",
	"reservedMonth": "index of Open, rebuilt by view",
	"latestRun":     "the newest of ActorRuns, rebuilt by view",
	"fallback":      "how the state was loaded, not what it knows",
	"snapHead":      "how the state was loaded, not what it knows",
	"decided":       "what this load replayed, for the runner's role check",
	"stopped":       "holds from one event to the next: an end and its retry are recorded together, in one commit",
	"deadSaved":     "what the checkout holds, not what the state knows",
}

func TestSnapshotCoversState(t *testing.T) {
	if stateCodecErr != nil {
		t.Fatalf("State cannot be stored in a snapshot: %v", stateCodecErr)
	}
	stored := map[string]bool{}
	for _, s := range stateCodec.sections {
		stored[reflect.TypeFor[State]().FieldByIndex(s.index).Name] = true
	}
	var walk func(t reflect.Type)
	var fields []reflect.StructField
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			fields = append(fields, f)
		}
	}
	walk(reflect.TypeFor[State]())
	for _, f := range fields {
		_, listed := notStored[f.Name]
		switch {
		case stored[f.Name] && listed:
			t.Errorf("State.%s is stored in snapshots but listed in notStored", f.Name)
		case !stored[f.Name] && !listed:
			t.Errorf("State.%s is not stored in snapshots: export it (with a json name) to store it, or rebuild it in view() and list it in notStored", f.Name)
		}
	}
	for name := range notStored {
		if !slices.ContainsFunc(fields, func(f reflect.StructField) bool { return f.Name == name }) {
			t.Errorf("notStored lists %s, which State does not have", name)
		}
	}
}

func TestCodecRefusesWhatItCannotStore(t *testing.T) {
	type inner struct{ a, B int } // JSON would drop a
	_ = inner{a: 1}
	type dropped struct {
		A int `json:"-"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct {
			M map[string]*struct{ X inner }
		}](),
		reflect.TypeFor[struct{ S *dropped }](),
		reflect.TypeFor[struct{ M map[int]string }](),
		reflect.TypeFor[struct {
			M map[string]*struct{ x int }
		}](),
		reflect.TypeFor[struct{ L []string }](),
	} {
		if _, err := newCodec(typ); err == nil {
			t.Errorf("%s: no error", typ)
		}
	}
}

// fillTexts are strings with every character the encoding must escape.
var fillTexts = []string{"", "plain", "tab\there", "line\nbreak", `back\slash`, `"quoted"`, "caf\u00e9 \u2603", "bad\xffutf8", "  spaced  ", "\x00nul", "cr\r"}

// filler sets values at random.
type filler struct {
	r      *rand.Rand
	inJSON bool // a nested record is stored as JSON, which holds only valid UTF-8, as the ledger does
}

func (f *filler) text() string { return fillTexts[f.r.IntN(len(fillTexts))] }

func (f *filler) value(v reflect.Value) {
	r := f.r
	switch {
	case v.Type() == timeType:
		if r.IntN(4) > 0 {
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9), 0).UTC()))
		}
	case v.Kind() == reflect.String:
		v.SetString(f.text())
		if f.inJSON {
			v.SetString(strings.ToValidUTF8(v.String(), "\uFFFD"))
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if r.IntN(3) > 0 {
			b, _ := json.Marshal(map[string]string{"k": f.text()}) // raw JSON, as the ledger holds it
			v.SetBytes(b)
		}
	case v.Kind() == reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		v.SetInt(r.Int64N(1e12) - 5e11)
	case v.Kind() == reflect.Float64:
		v.SetFloat(r.Float64())
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			f.value(v.Field(i))
		}
	case v.Kind() == reflect.Pointer:
		if r.IntN(3) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			f.inJSON = true
			f.value(v.Elem())
			f.inJSON = false
		}
	}
}

// entry is a random value of one map entry of section s.
func (f *filler) entry(s *section) reflect.Value {
	r := f.r
	switch s.kind {
	case listSection:
		val := reflect.MakeSlice(s.elem, 1+r.IntN(3), 1+r.IntN(3)+3)
		val = val.Slice(0, val.Len())
		for i := range val.Len() {
			f.value(val.Index(i))
		}
		return val
	case recordSection:
		p := reflect.New(s.elem)
		f.value(p.Elem())
		if !s.ptr {
			return p.Elem()
		}
		return p
	}
	val := reflect.New(s.elem).Elem()
	f.value(val)
	if val.Kind() == reflect.Bool {
		val.SetBool(true) // sets of keys hold true
	}
	return val
}

// fill sets every stored field of st to random values, strings with
// every character the encoding must escape.
func fill(r *rand.Rand, st *State) {
	f := &filler{r: r}
	root := reflect.ValueOf(st).Elem()
	for i := range stateCodec.sections {
		s := &stateCodec.sections[i]
		v := root.FieldByIndex(s.index)
		if s.kind == scalarSection {
			f.value(v)
			continue
		}
		for range 1 + r.IntN(3) {
			key := f.text() + fmt.Sprint(r.IntN(100))
			v.SetMapIndex(reflect.ValueOf(key), f.entry(s))
		}
	}
}

func TestSnapshotRoundTripsEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		st := New(time.Time{})
		fill(r, st)
		enc := stateCodec.encode(nil, st, nil)
		back := New(time.Time{})
		if err := stateCodec.decode(enc, 3, back, nil); err != nil {
			t.Fatalf("%v\n%s", err, enc)
		}
		for _, s := range stateCodec.sections {
			a, b := reflect.ValueOf(st).Elem().FieldByIndex(s.index), reflect.ValueOf(back).Elem().FieldByIndex(s.index)
			if !reflect.DeepEqual(a.Interface(), b.Interface()) {
				t.Fatalf("%s: wrote %#v, read %#v\n%s", s.name, a.Interface(), b.Interface(), enc)
			}
		}
		if again := stateCodec.encode(nil, back, nil); string(again) != string(enc) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, again)
		}
	}
}

// ticks drives the ledger like a runner does: each tick replays (from the
// snapshot), records random events through a journal and saves the
// snapshot, with the clock moving minutes to days ahead, so days, months
// (and checkpoints) and segments turn over.
type ticks struct {
	t     *testing.T
	r     *rand.Rand
	root  string
	store *ledger.Store
	now   time.Time
	open  []string // keys claimed or retrying
}

func newTicks(t *testing.T, seed uint64) *ticks {
	root := t.TempDir()
	return &ticks{t: t, r: rand.New(rand.NewPCG(seed, 7)), root: root, store: ledger.Open(root, 16<<10).NoSync(),
		now: time.Date(2026, 10, 27, 22, 0, 0, 0, time.UTC)}
}

var (
	tickIDs    = []string{"sch_a", "sch_b", "sch_c", "sch_d"}
	tickActors = []string{"astra", "agent_x", "n8n_workflow_y"}
)

// event is one random event at ts.
func (k *ticks) event(ts time.Time) *ledger.Event {
	r := k.r
	id := tickIDs[r.IntN(len(tickIDs))]
	slot := ts.Truncate(5 * time.Minute).Add(-time.Duration(r.IntN(3)) * 5 * time.Minute)
	key := ledger.SlotKey(id, slot)
	mode := ledger.ModeScheduled
	switch r.IntN(6) {
	case 0:
		key, mode = id+"@manual:"+fmt.Sprint(r.IntN(5)), ledger.ModeManual
	case 1:
		key, mode = id+"@event:push:"+fmt.Sprint(r.IntN(5)), ledger.ModeEvent
	}
	if len(k.open) > 0 && r.IntN(2) == 0 {
		key = k.open[r.IntN(len(k.open))]
		id, _, _ = strings.Cut(key, "@")
	}
	e := &ledger.Event{TS: ts, ScheduleID: id, Slot: slot, IdempotencyKey: key, Actor: tickActors[r.IntN(len(tickActors))],
		Tool: "t", Tier: r.IntN(3), Mode: mode, Attempt: r.IntN(3), TraceID: fmt.Sprintf("%032x", r.Uint64())}
	token := fmt.Sprintf("sha256:%x", r.IntN(6))
	switch n := r.IntN(25); {
	case n < 12:
		k.runEvent(e, n, ts, key)
	case n < 17:
		approvalEvent(r, e, n, ts, id, token)
	default:
		otherEvent(r, e, n, ts, key, slot)
	}
	return e
}

func detail(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// runEvent makes e one of the run events (n below 12).
func (k *ticks) runEvent(e *ledger.Event, n int, ts time.Time, key string) {
	r := k.r
	switch n {
	case 0, 1, 2, 3:
		e.Event, e.Status, e.Runner, e.ExpiresAt = ledger.RunClaimed, ledger.StatusClaimed, "r1", ts.Add(10*time.Minute)
		e.Limit = money.USD(r.IntN(5) * 100000)
		k.open = append(k.open, key)
	case 4, 5, 6:
		e.Event, e.Status = ledger.RunCompleted, ledger.StatusOK
		e.Usage = ledger.Usage{Tokens: int64(r.IntN(3000)), Cost: money.USD(r.IntN(90000)), ToolCalls: 1}
	case 7:
		e.Event, e.Status, e.Reason, e.Error = ledger.RunFailed, ledger.StatusFailed, ledger.ReasonExit, "exit status 1\n\tat line 2 \xff"
		e.Usage = ledger.Usage{Cost: money.USD(r.IntN(1000))}
	case 8:
		e.Event, e.Status, e.RetryAt, e.Error = ledger.RunRetryScheduled, ledger.StatusRetry, ts.Add(time.Minute), "boom\t\xff"
		k.open = append(k.open, key)
	case 9:
		e.Event, e.Status, e.Error = ledger.RunDeadLettered, ledger.StatusDeadLetter, "failed 3 times"
	case 10:
		e.Event, e.Status = ledger.DeadLetterReleased, ledger.StatusReleased
	case 11:
		e.Event, e.Status, e.Reason = ledger.RunSkipped, ledger.StatusSkipped, ledger.ReasonBudget
	}
}

// approvalEvent makes e one of the approval events (n from 12 to 16).
func approvalEvent(r *rand.Rand, e *ledger.Event, n int, ts time.Time, id, token string) {
	switch n {
	case 12:
		e.Event, e.Status, e.PR, e.ExpiresAt, e.PayloadHash = ledger.ApprovalRequested, ledger.StatusPending, 1+r.IntN(50), ts.Add(24*time.Hour), "sha256:p"
		e.Detail = detail(ApprovalDetail{Token: token, Branch: "astra/approve/" + id, Action: json.RawMessage(`{"hash":"sha256:a"}`), Event: json.RawMessage(`{"ref":"main"}`)})
	case 13:
		e.Event, e.Status, e.By = ledger.ApprovalApproved, ledger.StatusApproved, "octocat"
		if r.IntN(3) == 0 {
			e.IdempotencyKey = ""
		}
		e.Detail = detail(ApprovalDetail{Token: token})
	case 14:
		e.Event, e.Status = []ledger.Kind{ledger.ApprovalRejected, ledger.ApprovalExpired}[r.IntN(2)], ledger.StatusRejected
	case 15:
		e.Event, e.Status, e.ExpiresAt = ledger.ApprovalConsumed, ledger.StatusConsumed, ts.Add(time.Duration(r.IntN(48))*time.Hour)
		e.Detail = detail(ApprovalDetail{Token: token})
	case 16:
		e.Event, e.Status, e.ExpiresAt = []ledger.Kind{ledger.ApprovalRefused, ledger.ApprovalIgnored}[r.IntN(2)], ledger.StatusRefused, ts.Add(time.Hour)
		e.Detail = detail(ApprovalDetail{Token: token, Settles: r.IntN(2) == 0})
	}
}

// otherEvent makes e a trigger, rollback, budget, schedule, clock, memory
// or notification event (n from 17).
func otherEvent(r *rand.Rand, e *ledger.Event, n int, ts time.Time, key string, slot time.Time) {
	switch n {
	case 17:
		e.Event, e.Status, e.ExpiresAt = ledger.TriggerAccepted, ledger.StatusOK, ts.Add(5*time.Minute)
		e.Detail = detail(map[string]string{"signature": fmt.Sprint(r.IntN(1000))})
	case 18:
		e.Event, e.Status = ledger.RollbackCompleted, ledger.StatusOK
		e.Detail = detail(RollbackDetail{Run: ledger.RunID(key, 1)})
	case 19:
		e.Event, e.Status = []ledger.Kind{ledger.BudgetWarning, ledger.BudgetExceeded}[r.IntN(2)], ledger.StatusWarning
		e.Period, e.Threshold = []string{"day", "month"}[r.IntN(2)], []float64{0.5, 0.8, 1}[r.IntN(3)]
	case 20:
		e.Event, e.Status, e.Period = ledger.BudgetPaused, "pause-all", []string{"day", "month"}[r.IntN(2)]
	case 21:
		e.Event, e.Status, e.Period = ledger.BudgetResumed, ledger.StatusResumed, []string{"day", "month"}[r.IntN(2)]
		switch r.IntN(3) {
		case 0:
			e.Limit = money.USD(r.IntN(5)+1) * money.Dollar
		case 1:
			e.ExpiresAt = ts.Add(time.Duration(r.IntN(300)) * time.Minute)
		}
	case 22:
		e.Event, e.Status, e.PayloadHash = []ledger.Kind{ledger.ScheduleCreated, ledger.ScheduleUpdated}[r.IntN(2)],
			[]string{ledger.StatusOK, ledger.StatusDisabled}[r.IntN(2)], fmt.Sprintf("sha256:%d", r.IntN(3))
	case 23:
		e.Event, e.Status = ledger.ClockCorrected, ledger.StatusCorrected
		e.Detail = detail(Correction{After: ts.Add(-time.Duration(r.IntN(30)) * time.Minute), Early: map[string]time.Time{key: slot}})
	default:
		e.Event = []ledger.Kind{ledger.ScheduleDeleted, ledger.MemoryStored, ledger.NotifySent}[r.IntN(3)]
		e.Output = "remember this"
	}
}

// tick is one run at k.now: replay, record, save; it returns the journal.
func (k *ticks) tick(save bool) *Journal {
	k.t.Helper()
	st, tail, err := Replay(k.store, k.now)
	if err != nil {
		k.t.Fatal(err)
	}
	clock := k.now
	j := NewJournal(k.store, st, tail, func() time.Time { return clock }, false)
	for range 1 + k.r.IntN(4) {
		var evs []*ledger.Event
		for range 1 + k.r.IntN(5) {
			evs = append(evs, k.event(clock))
		}
		if err := j.Record(evs...); err != nil {
			k.t.Fatal(err)
		}
		clock = clock.Add(time.Duration(k.r.IntN(90)) * time.Second)
	}
	if save {
		if err := j.SaveSnapshot(); err != nil {
			k.t.Fatal(err)
		}
	}
	step := []time.Duration{time.Minute, 5 * time.Minute, 3 * time.Hour, 26 * time.Hour}[k.r.IntN(4)]
	k.now = clock.Add(step + time.Duration(k.r.Int64N(int64(time.Minute)))) // runs start at any instant, events are stamped in seconds
	return j
}

// observe is everything a decision can see of st: what a snapshot stores,
// and the views at Now.
func observe(st *State) string {
	var b strings.Builder
	b.Write(stateCodec.encode(nil, st, nil))
	fmt.Fprintf(&b, "now %s\nspend %+v\nreserved %v %v\n", st.Now, st.Spend, st.Reserved("day"), st.Reserved("month"))
	for _, p := range []string{"day", "month"} {
		if pz := st.Pauses[p]; pz != nil {
			fmt.Fprintf(&b, "pause %s %+v\n", p, *pz)
		}
		r, _ := st.Limit(p, money.Dollar)
		fmt.Fprintf(&b, "resumed %s %v %v\n", p, st.ResumedIn(p) != nil, r)
	}
	for _, id := range tickIDs {
		fmt.Fprintf(&b, "consumed %s %d quarantined %v\n", id, st.ConsumedToday(id), st.Quarantined(id))
	}
	for _, a := range tickActors {
		fmt.Fprintf(&b, "runs %s %d %d\n", a, st.RunsSince(a, st.Now.Add(-time.Hour)), st.RunsSince(a, st.Now.Add(-time.Minute)))
	}
	return b.String()
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  snapshot: %q\n  replay:   %q", i+1, x, y)
		}
	}
	return ""
}

// TestSnapshotEqualsReplay is the property a snapshot must have: after any
// sequence of runs, the state loaded from the snapshot plus the events
// after its head is the state a full replay rebuilds, seen from any time.
func TestSnapshotEqualsReplay(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			k := newTicks(t, seed)
			checkpoints := 0
			for n := range 40 {
				save := k.r.IntN(8) > 0 // sometimes the snapshot lags: the next run replays more after its head
				j := k.tick(save)
				if k.r.IntN(25) == 0 {
					os.Remove(filepath.Join(k.root, SnapshotPath))
				}
				other := []time.Time{k.now.Add(-time.Duration(k.r.IntN(7200)) * time.Second), k.now.Add(40 * 24 * time.Hour)}[k.r.IntN(2)]
				for _, now := range []time.Time{k.now, other} {
					fast, ftail, err := Replay(k.store, now)
					if err != nil {
						t.Fatal(err)
					}
					full, rtail, err := ReplayEach(k.store, now, nil)
					if err != nil {
						t.Fatal(err)
					}
					if ftail != rtail {
						t.Fatalf("run %d: tails differ: %+v, %+v", n, ftail, rtail)
					}
					if d := diffLines(observe(fast), observe(full)); d != "" {
						t.Fatalf("run %d at %s (snapshot used: %v): %s", n, now, fast.Fallback() == "", d)
					}
				}
				// The journal's own state is the replay's too.
				full, _, _ := ReplayEach(k.store, j.State().Now, nil)
				if d := diffLines(observe(j.State()), observe(full)); d != "" {
					t.Fatalf("run %d: the journal's state is not the replay's: %s", n, d)
				}
				if _, err := VerifySnapshot(k.store); err != nil {
					t.Fatalf("run %d: %v", n, err)
				}
				if full.Events > 0 && int64(full.Events) < j.tail.Seq {
					checkpoints++
				}
			}
			if checkpoints == 0 {
				t.Fatal("no month turned over: the test covers no checkpoint")
			}
		})
	}
}

func TestReplaySaysWhyItReplayed(t *testing.T) {
	k := newTicks(t, 42)
	for range 5 {
		k.tick(true)
	}
	check := func(want string) *State {
		t.Helper()
		st, _, err := Replay(k.store, k.now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.Fallback(), want) || want == "" && st.Fallback() != "" {
			t.Fatalf("fallback %q, want %q", st.Fallback(), want)
		}
		full, _, _ := ReplayEach(k.store, k.now, nil)
		if d := diffLines(observe(st), observe(full)); d != "" {
			t.Fatal(d)
		}
		return st
	}
	check("")
	snap := filepath.Join(k.root, SnapshotPath)
	data, _ := os.ReadFile(snap)

	os.WriteFile(snap, []byte(strings.Replace(string(data), "astra-state\t2\t", "astra-state\t2\tx", 1)), 0o644)
	check("written by another version of astra")
	os.WriteFile(snap, []byte(strings.Replace(string(data), "astra-state\t2\t", "astra-state\t1\t", 1)), 0o644)
	check("written by another version of astra")

	lines := strings.SplitN(string(data), "\n", 4)
	f := strings.Split(lines[1], "\t")
	os.WriteFile(snap, []byte(lines[0]+"\nhead\t"+f[1]+"\t"+f[2]+"\t"+strings.Repeat("0", 64)+"\n"+lines[2]+"\n"+lines[3]), 0o644)
	check("does not match the ledger")

	os.WriteFile(snap, []byte(lines[0]+"\nhead\tvar/schedules/1999-01.ndjson.gz\t"+f[2]+"\t"+f[3]+"\n"+lines[2]+"\n"+lines[3]), 0o644)
	check("not in the checkout")

	os.WriteFile(snap, []byte(lines[0]+"\n"+lines[1]+"\n"+lines[2]+"\nopen\tbogus\n"), 0o644)
	check(SnapshotPath + ":4: open: want columns")

	os.WriteFile(snap, []byte(lines[0]+"\n"+lines[1]+"\n"+lines[2]+"\ndead_letters\tkey\n"), 0o644)
	check(SnapshotPath + `:4: unknown section "dead_letters"`)

	// The dead letters' file is bound to the snapshot by its sha256.
	os.WriteFile(snap, data, 0o644)
	check("")
	dead := filepath.Join(k.root, DeadLettersPath)
	deadData, _ := os.ReadFile(dead)
	if !strings.HasPrefix(string(deadData), "dead_letters\t") || strings.Count(string(deadData), "\n") < 2 {
		t.Fatalf("the ticks left no dead letters to check: %q", deadData)
	}
	os.WriteFile(dead, deadData[:len(deadData)-20], 0o644)
	check(DeadLettersPath + " is not the file " + SnapshotPath + " names")
	os.Remove(dead)
	check(SnapshotPath + " names " + DeadLettersPath + ", which is missing")
	os.WriteFile(dead, deadData, 0o644)
	check("")

	os.Remove(snap)
	check("there is no " + SnapshotPath)

	// An empty ledger needs no snapshot.
	st, _, err := Replay(ledger.Open(t.TempDir(), 0), k.now)
	if err != nil || st.Fallback() != "" {
		t.Fatalf("empty ledger: %v %q", err, st.Fallback())
	}
}

// TestSnapshotStandsInForMissingHistory: a sparse checkout holds only the
// newest ledger file and the snapshot. Runs work from it; without a usable
// snapshot the replay refuses rather than rebuild a state from half a
// month.
func TestSnapshotStandsInForMissingHistory(t *testing.T) {
	k := newTicks(t, 9)
	k.now = time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC) // a month without checkpoints... until December
	for range 40 {
		k.tick(true)
		if k.now.Month() != 11 {
			break
		}
	}
	want, _, err := Replay(k.store, k.now)
	if err != nil || want.Fallback() != "" {
		t.Fatal(err, want.Fallback())
	}
	segs, _ := k.store.Segments()
	if len(segs) < 3 {
		t.Fatalf("only %d segments", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		os.Remove(filepath.Join(k.root, s.Path))
	}
	got, _, err := Replay(k.store, k.now)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffLines(observe(got), observe(want)); d != "" {
		t.Fatal(d)
	}
	if c, err := VerifySnapshot(k.store); err != nil || !strings.Contains(c.Note, "not compared") {
		t.Fatalf("verify in a sparse checkout: %+v %v", c, err)
	}
	j := k.tick(true) // and a run appends and saves
	if _, err := os.Stat(filepath.Join(k.root, j.tail.Segment.Path)); err != nil {
		t.Fatal(err)
	}

	os.Remove(filepath.Join(k.root, SnapshotPath))
	_, _, err = Replay(k.store, k.now)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "git sparse-checkout disable") {
		t.Fatalf("replay without history or snapshot: %v", err)
	}
}

func TestVerifySnapshotNamesTheLineThatDiffers(t *testing.T) {
	k := newTicks(t, 3)
	for range 30 {
		k.tick(true)
	}
	c, err := VerifySnapshot(k.store)
	if err != nil || c.Note != "" || c.Seq == 0 {
		t.Fatalf("%+v %v", c, err)
	}
	snap := filepath.Join(k.root, SnapshotPath)
	data, _ := os.ReadFile(snap)
	lines := strings.Split(string(data), "\n")
	n := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "\tsch_") })
	lines[n] = strings.Replace(lines[n], "\t", "\tz", 1)
	os.WriteFile(snap, []byte(strings.Join(lines, "\n")), 0o644)
	_, err = VerifySnapshot(k.store)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d: differs from a replay", SnapshotPath, n+1)) {
		t.Fatalf("edited line %d: %v", n+1, err)
	}
	os.WriteFile(snap, []byte("not a snapshot\n"), 0o644)
	if _, err := VerifySnapshot(k.store); err == nil || !strings.Contains(err.Error(), SnapshotPath+":1: not an astra state snapshot") {
		t.Fatalf("garbage: %v", err)
	}
	os.Remove(snap)
	if c, err := VerifySnapshot(k.store); err != nil || !strings.Contains(c.Note, "there is no") {
		t.Fatalf("missing: %+v %v", c, err)
	}
}
