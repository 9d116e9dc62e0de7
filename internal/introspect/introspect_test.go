package introspect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// history writes events to a ledger under a new root, one append per
// event (so a month change starts a new segment), and returns the store.
func history(t *testing.T, events ...*ledger.Event) *ledger.Store {
	t.Helper()
	store := ledger.Open(t.TempDir(), 0)
	var tail ledger.Tail
	for _, e := range events {
		seg, _ := store.Target(tail, e.TS)
		var err error
		if tail, err = store.Append(tail, seg, []*ledger.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// ev is an event of a scheduled run of schedule id at slot, minutes after
// the slot.
func ev(kind ledger.Kind, id string, slot time.Time, minutes int) *ledger.Event {
	return &ledger.Event{Event: kind, ScheduleID: id, Slot: slot, TS: slot.Add(time.Duration(minutes) * time.Minute),
		IdempotencyKey: ledger.SlotKey(id, slot), Attempt: 1, Mode: ledger.ModeScheduled, Actor: "astra", Tool: "t_" + id, TraceID: "trace-" + id}
}

func with(e *ledger.Event, f func(e *ledger.Event)) *ledger.Event { f(e); return e }

// runIDs lists the tasks as "run id status".
func runIDs(ts []Task) []string {
	var out []string
	for _, task := range ts {
		out = append(out, task.RunID+" "+task.Status)
	}
	return out
}

// fourTasks is a ledger of a completed run, a failed one, a skip and a
// claim without an outcome yet, and their run ids.
func fourTasks(t *testing.T) (store *ledger.Store, ok, bad, skip, open string) {
	a, b, c := now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour)
	store = history(t,
		ev(ledger.RunClaimed, "ok", a, 0),
		with(ev(ledger.RunCompleted, "ok", a, 2), func(e *ledger.Event) {
			e.Usage, e.Output = ledger.Usage{Tokens: 10, Cost: money.Dollar / 100}, "done"
		}),
		ev(ledger.RunClaimed, "bad", b, 0),
		with(ev(ledger.RunFailed, "bad", b, 1), func(e *ledger.Event) { e.Reason, e.Error = ledger.ReasonExit, "exit status 1" }),
		with(ev(ledger.RunSkipped, "skip", b, 0), func(e *ledger.Event) { e.Reason = ledger.ReasonBudget }),
		ev(ledger.RunClaimed, "open", c, 0),
	)
	return store, ledger.RunID(ledger.SlotKey("ok", a), 1), ledger.RunID(ledger.SlotKey("bad", b), 1),
		ledger.RunID(ledger.SlotKey("skip", b), 1), ledger.RunID(ledger.SlotKey("open", c), 1)
}

func TestTasksFollowARunFromClaimToOutcome(t *testing.T) {
	store, ok, bad, skip, open := fourTasks(t)
	ts, err := Tasks(store, now, Query{Status: "all", Output: true})
	if err != nil {
		t.Fatal(err)
	}
	// Newest start first, then the greater run id; a claim and its outcome
	// are one task.
	want := []string{open + " running", skip + " skipped", bad + " failed", ok + " completed"}
	if got := runIDs(ts); !slices.Equal(got, want) {
		t.Fatalf("tasks\n got  %q\n want %q", got, want)
	}
	done, f, s, o := ts[3], ts[2], ts[1], ts[0]
	got := fmt.Sprintln(done.Started, done.Ended, done.Usage.Tokens, done.Output, done.Tool, done.Mode, done.TraceID, done.Attempt)
	if want := "2026-11-20 09:00:00 +0000 UTC 2026-11-20 09:02:00 +0000 UTC 10 done t_ok scheduled trace-ok 1\n"; got != want {
		t.Errorf("completed task\n got  %s\n want %s", got, want)
	}
	if f.Reason != ledger.ReasonExit || f.Error != "exit status 1" {
		t.Errorf("failed task %+v", f)
	}
	if s.Reason != ledger.ReasonBudget || !s.Ended.Equal(s.Started) {
		t.Errorf("skipped task %+v", s)
	}
	if !o.Ended.IsZero() {
		t.Errorf("a running task has ended: %+v", o)
	}
}

func TestTasksByStatus(t *testing.T) {
	store, ok, bad, skip, open := fourTasks(t)
	for status, want := range map[string][]string{
		"":          {open + " running", bad + " failed", ok + " completed"}, // runs, not skips
		"failed":    {bad + " failed"},
		"skipped":   {skip + " skipped"},
		"running":   {open + " running"},
		"completed": {ok + " completed"},
	} {
		ts, err := Tasks(store, now, Query{Status: status})
		if got := runIDs(ts); err != nil || !slices.Equal(got, want) {
			t.Errorf("status %q: %v\n got  %q\n want %q", status, err, got, want)
		}
	}
	if ts, _ := Tasks(store, now, Query{Status: "all", Limit: 2}); !slices.Equal(runIDs(ts), []string{open + " running", skip + " skipped"}) {
		t.Errorf("limit 2 keeps the newest: %q", runIDs(ts))
	}
}

func TestTasksFilters(t *testing.T) {
	slot := now.Add(-time.Hour)
	store := history(t,
		with(ev(ledger.RunCompleted, "a", slot, 0), func(e *ledger.Event) { e.Actor, e.Tenant = "bot", "acme" }),
		with(ev(ledger.RunCompleted, "b", slot, 1), func(e *ledger.Event) { e.Tenant = "other" }),
		with(ev(ledger.RunCompleted, "c", slot, 2), func(e *ledger.Event) { e.TraceID = "trace-a" }),
		// Not a task: no idempotency key.
		&ledger.Event{Event: ledger.BudgetWarning, TS: slot, Period: "day"},
	)
	for name, c := range map[string]struct {
		q    Query
		want []string
	}{
		"schedule": {Query{Schedule: "b"}, []string{"b"}},
		"actor":    {Query{Actor: "bot"}, []string{"a"}},
		"tenant":   {Query{Tenant: "acme"}, []string{"a"}},
		"trace":    {Query{TraceID: "trace-a"}, []string{"c", "a"}},
		"none":     {Query{Schedule: "nope"}, nil},
		"all":      {Query{}, []string{"c", "b", "a"}},
	} {
		ts, err := Tasks(store, now, c.q)
		var got []string
		for _, task := range ts {
			got = append(got, task.ScheduleID)
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v: got %q, want %q", name, err, got, c.want)
		}
	}
}

// Without Since a query reads the current month; an outcome whose claim
// is older than what is read is still a task.
func TestTasksReadTheCurrentMonthByDefault(t *testing.T) {
	last, edge := time.Date(2026, 10, 31, 23, 0, 0, 0, time.UTC), time.Date(2026, 10, 31, 23, 58, 0, 0, time.UTC)
	store := history(t,
		ev(ledger.RunClaimed, "old", last, 0),
		ev(ledger.RunCompleted, "old", last, 1),
		ev(ledger.RunClaimed, "edge", edge, 0),
		ev(ledger.RunCompleted, "edge", edge, 5), // 2026-11-01 00:03
	)
	if segs, _ := store.Segments(); len(segs) != 2 {
		t.Fatalf("want a segment per month, got %v", segs)
	}
	ts, err := Tasks(store, now, Query{})
	if err != nil || len(ts) != 1 || ts[0].ScheduleID != "edge" || !ts[0].Started.Equal(edge.Add(5*time.Minute)) {
		t.Fatalf("this month: %v %+v", err, ts)
	}
	ts, err = Tasks(store, now, Query{Since: last.Add(-time.Hour)})
	if err != nil || len(ts) != 2 || !ts[0].Started.Equal(edge) {
		t.Fatalf("since last month: %v %+v", err, ts)
	}
}

// A rollback of a completed run marks it rolled back; a rollback naming
// an unknown run or a failed one changes nothing.
func TestTasksRolledBack(t *testing.T) {
	a, b := now.Add(-2*time.Hour), now.Add(-time.Hour)
	runA, runB := ledger.RunID(ledger.SlotKey("a", a), 1), ledger.RunID(ledger.SlotKey("b", b), 1)
	rollback := func(run string, at time.Time) *ledger.Event {
		d, _ := json.Marshal(state.RollbackDetail{Run: run})
		return &ledger.Event{Event: ledger.RollbackCompleted, TS: at, IdempotencyKey: "rollback:" + run, Detail: d}
	}
	store := history(t,
		ev(ledger.RunCompleted, "a", a, 0),
		ev(ledger.RunFailed, "b", b, 0),
		rollback(runA, b.Add(time.Minute)),
		rollback(runB, b.Add(2*time.Minute)),
		rollback("nothing#1", b.Add(3*time.Minute)),
	)
	ts, err := Tasks(store, now, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runIDs(ts), []string{runB + " failed", runA + " rolled_back"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if ts, _ := Tasks(store, now, Query{Status: "rolled_back"}); len(ts) != 1 || ts[0].RunID != runA {
		t.Fatalf("rolled_back: %+v", ts)
	}
}

func TestByTraceAndLastFailed(t *testing.T) {
	slot := now.Add(-3 * time.Hour)
	first := ev(ledger.RunFailed, "x", slot, 0)
	retry := with(ev(ledger.RunFailed, "x", slot, 30), func(e *ledger.Event) { e.Attempt = 2 })
	chained := with(ev(ledger.RunCompleted, "y", slot, 40), func(e *ledger.Event) {
		e.IdempotencyKey, e.TraceID = ledger.ChainKey(ledger.SlotKey("x", slot), "y"), "trace-x"
	})
	other := ev(ledger.RunFailed, "z", slot, 50)
	old := ev(ledger.RunFailed, "old", now.AddDate(0, 0, -FailedDays-1), 0)
	store := history(t, old, first, retry, chained, other)

	ts, err := ByTrace(store, now, "trace-x", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range ts {
		got = append(got, task.RunID)
	}
	if want := []string{first.RunID(), retry.RunID(), chained.RunID()}; !slices.Equal(got, want) {
		t.Fatalf("by trace, oldest first: got %q, want %q", got, want)
	}
	if ts[1].Attempt != 2 {
		t.Errorf("the retry's attempt: %d", ts[1].Attempt)
	}

	ts, err = LastFailed(store, now, 2, false)
	if err != nil || len(ts) != 2 || ts[0].ScheduleID != "z" || ts[1].RunID != retry.RunID() {
		t.Fatalf("last failed: %v %q", err, runIDs(ts))
	}
	if ts, _ := LastFailed(store, now, 0, false); len(ts) != 3 {
		t.Fatalf("failures older than %d days are not read: %q", FailedDays, runIDs(ts))
	}
}

// Missing names what a sparse checkout lacks, and nothing when the ledger
// starts with its first event or before what is asked.
func TestMissing(t *testing.T) {
	store := history(t,
		ev(ledger.RunCompleted, "a", time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC), 0),
		ev(ledger.RunCompleted, "a", time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC), 0),
	)
	if m := Missing(store, now.AddDate(-1, 0, 0)); m != "" {
		t.Fatalf("the whole ledger: %q", m)
	}
	segs, _ := store.Segments()
	if err := os.Remove(filepath.Join(store.Root(), segs[0].Path)); err != nil {
		t.Fatal(err)
	}
	m := Missing(store, now.AddDate(-1, 0, 0))
	if !strings.Contains(m, "runs before 2026-11-05T00:00:00Z are not in this checkout") || !strings.Contains(m, segs[1].Path) {
		t.Fatalf("sparse: %q", m)
	}
	if m := Missing(store, time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC)); m != "" {
		t.Fatalf("a question the checkout answers: %q", m)
	}
	if m := Missing(ledger.Open(t.TempDir(), 0), now); m != "" {
		t.Fatalf("no ledger: %q", m)
	}
}

func usd(s string) money.USD {
	u, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestBudgetReport(t *testing.T) {
	cfg := &model.Config{
		Policies: model.Policies{Budget: model.GlobalBudget{DailyLimit: usd("10"), MonthlyLimit: usd("100"),
			AlertThresholds: []float64{0.5, 0.8}, OnLimitReached: model.PauseNonCritical}},
		Schedules: []*model.Schedule{
			{ID: "reader", Name: "reader", SafetyTier: model.TierReadOnly},
			{ID: "writer", Name: "writer", SafetyTier: model.TierLocalWrite, PerDayBudget: 3},
			{ID: "spender", Name: "spender", SafetyTier: model.TierExternal, PerDayBudget: 1},
		},
	}
	st := state.New(now)
	done := func(id string, tier int, at time.Time, cost string) {
		st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: id, Tier: tier, TS: at, IdempotencyKey: ledger.SlotKey(id, at),
			Usage: ledger.Usage{Cost: usd(cost), Tokens: 100}})
	}
	done("writer", 1, now.AddDate(0, 0, -1), "40") // yesterday: this month only
	done("writer", 1, now.Add(-2*time.Hour), "5")
	done("writer", 1, now.Add(-time.Hour), "1")
	done("reader", 0, now.Add(-time.Hour), "0.5")
	slot := now.Add(-time.Minute)
	st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "spender", Tier: 2, TS: slot, Slot: slot, Mode: ledger.ModeScheduled,
		IdempotencyKey: ledger.SlotKey("spender", slot), Limit: usd("2")})
	st.Apply(&ledger.Event{Event: ledger.BudgetPaused, TS: now.Add(-30 * time.Minute), Period: "day", Status: model.PauseNonCritical})

	b := BudgetReport(cfg, st)
	if b.Day != "2026-11-20" {
		t.Errorf("day %q", b.Day)
	}
	g := b.Global
	if g.Day.Spent != usd("6.5") || g.Day.Reserved != usd("2") || g.Day.Limit != usd("10") || g.Day.Tokens != 300 || g.Day.Left() != usd("1.5") {
		t.Errorf("day %+v, left %s", g.Day, g.Day.Left())
	}
	if g.Month.Spent != usd("46.5") || g.Month.Tokens != 400 || g.Month.Left() != usd("51.5") || g.Month.Paused != "" {
		t.Errorf("month %+v, left %s", g.Month, g.Month.Left())
	}
	// 6.5 of 10 a day is past 0.5; 46.5 of 100 a month is not.
	if g.AlertLevel != 0.5 || g.OnLimitReached != model.PauseNonCritical {
		t.Errorf("alert level %v, on limit %q", g.AlertLevel, g.OnLimitReached)
	}
	if want := "day since 2026-11-20T11:30:00Z (pause-non-critical)"; g.Paused() != want {
		t.Errorf("paused %q, want %q", g.Paused(), want)
	}
	want := []ScheduleBudget{
		{ScheduleID: "reader", Name: "reader", Tier: 0, LastReset: "2026-11-20"}, // no per-day run count
		{ScheduleID: "writer", Name: "writer", Tier: 1, PerDay: 3, Consumed: 2, Left: 1, LastReset: "2026-11-20"},
		{ScheduleID: "spender", Name: "spender", Tier: 2, PerDay: 1, Consumed: 1, Left: 0, LastReset: "2026-11-20"}, // its live claim counts
	}
	if !slices.Equal(b.Schedules, want) {
		t.Errorf("schedules\n got  %+v\n want %+v", b.Schedules, want)
	}
}

// Reaching a limit is alert level 1, whichever period reaches it.
func TestBudgetReportAtTheLimit(t *testing.T) {
	cfg := &model.Config{Policies: model.Policies{Budget: model.GlobalBudget{DailyLimit: usd("100"), MonthlyLimit: usd("10"),
		AlertThresholds: []float64{0.8}}}}
	st := state.New(now)
	st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "s", TS: now.AddDate(0, 0, -2), IdempotencyKey: "k", Usage: ledger.Usage{Cost: usd("12")}})
	g := BudgetReport(cfg, st).Global
	if g.AlertLevel != 1 || g.Month.Left() != 0 || g.Day.Spent != 0 || g.Paused() != "" {
		t.Fatalf("%+v", g)
	}
	cfg.Policies.Budget.MonthlyLimit = 0 // no limit: no alert
	if g := BudgetReport(cfg, st).Global; g.AlertLevel != 0 {
		t.Fatalf("without limits: %+v", g)
	}
}

func TestText(t *testing.T) {
	if got := Text(nil); got != "no tasks\n" {
		t.Fatalf("%q", got)
	}
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	got := Text([]Task{
		{Started: at, Status: "failed", RunID: "a@x#1", Tool: "deploy", Reason: "exit", Error: "exit status 2"},
		{Started: at, Status: "completed", RunID: "b@x#1", Tool: "noop"},
	})
	want := "2026-11-20T09:00:00Z failed    a@x#1 deploy (exit): exit status 2\n" +
		"2026-11-20T09:00:00Z completed b@x#1 noop\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
