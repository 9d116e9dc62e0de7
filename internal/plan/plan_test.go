package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func hourly(id string, mut ...func(*model.Schedule)) *model.Schedule {
	spec, _ := cron.Parse("0 * * * *", time.UTC)
	s := &model.Schedule{ID: id, Name: id, Enabled: true, Priority: 5, Spec: spec,
		Catchup: model.Catchup{Policy: model.CatchupLatest, Window: model.Duration(24 * time.Hour), Max: 10}}
	for _, m := range mut {
		m(s)
	}
	return s
}

func created(st *state.State, id string, at time.Time) {
	st.Apply(&ledger.Event{Event: ledger.ScheduleCreated, ScheduleID: id, TS: at})
}

func kinds(cs []Candidate) string {
	out := ""
	for _, c := range cs {
		out += fmt.Sprintf("%s:%s:%s ", c.Schedule.ID, c.Kind, c.Slot.Format("15:04"))
	}
	return out
}

func TestDue(t *testing.T) {
	now := t0.Add(3*time.Hour + 30*time.Second)
	cases := []struct {
		name  string
		sched []*model.Schedule
		setup func(*state.State)
		want  string
	}{
		{"first sight: nothing before it is due", []*model.Schedule{hourly("a")}, nil, ""},
		{"run_immediately on first sight", []*model.Schedule{hourly("a", func(s *model.Schedule) { s.RunImmediately = true })}, nil, "a:slot:03:00 "},
		// The runner records schedule.created before it plans.
		{"run_immediately once created", []*model.Schedule{hourly("a", func(s *model.Schedule) { s.RunImmediately = true })},
			func(st *state.State) { created(st, "a", now) }, "a:slot:03:00 "},
		{"run_immediately added to a repository long in use", []*model.Schedule{hourly("old"), hourly("a", func(s *model.Schedule) { s.RunImmediately = true; s.Spec = nil })},
			func(st *state.State) {
				created(st, "old", t0)
				st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "old", Slot: t0.Add(3 * time.Hour), IdempotencyKey: "old@2026-11-22T03:00:00Z", Mode: ledger.ModeScheduled})
				created(st, "a", now)
			}, "a:slot:03:00 "},
		{"run_immediately runs once", []*model.Schedule{hourly("a", func(s *model.Schedule) { s.RunImmediately = true; s.Spec = nil })},
			func(st *state.State) {
				created(st, "a", t0)
				st.Apply(&ledger.Event{Event: ledger.RunSkipped, ScheduleID: "a", Slot: t0, IdempotencyKey: "a@2026-11-22T00:00:00Z", Mode: ledger.ModeScheduled})
			}, ""},
		{"latest slot after creation", []*model.Schedule{hourly("a")}, func(st *state.State) { created(st, "a", t0) }, "a:slot:03:00 "},
		{"disabled is never due", []*model.Schedule{hourly("a", func(s *model.Schedule) { s.Enabled = false })}, func(st *state.State) { created(st, "a", t0) }, ""},
		{"priority first, then slot", []*model.Schedule{hourly("low", func(s *model.Schedule) { s.Priority = 1 }), hourly("high", func(s *model.Schedule) { s.Priority = 9 })},
			func(st *state.State) { created(st, "low", t0); created(st, "high", t0) }, "high:slot:03:00 low:slot:03:00 "},
		{"a retry whose backoff passed", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.RunRetryScheduled, ScheduleID: "a", Slot: t0.Add(3 * time.Hour), IdempotencyKey: "a@2026-11-22T03:00:00Z",
				Mode: ledger.ModeScheduled, Attempt: 2, RetryAt: now.Add(-time.Second)})
		}, "a:retry:03:00 "},
		{"a retry still backing off", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.RunRetryScheduled, ScheduleID: "a", Slot: t0.Add(3 * time.Hour), IdempotencyKey: "a@2026-11-22T03:00:00Z",
				Mode: ledger.ModeScheduled, Attempt: 2, RetryAt: now.Add(time.Minute)})
		}, ""},
		{"a live claim is left alone", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "a", Slot: t0.Add(3 * time.Hour), IdempotencyKey: "a@2026-11-22T03:00:00Z",
				Mode: ledger.ModeScheduled, TS: now, ExpiresAt: now.Add(time.Minute)})
		}, ""},
		{"a claim past its deadline is lost", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.RunClaimed, ScheduleID: "a", Slot: t0.Add(2 * time.Hour), IdempotencyKey: "a@2026-11-22T02:00:00Z",
				Mode: ledger.ModeScheduled, TS: t0.Add(2 * time.Hour), ExpiresAt: t0.Add(2*time.Hour + 15*time.Minute), Attempt: 1})
		}, "a:lost:02:00 a:slot:03:00 "},
		{"an approved request", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: "a", Slot: t0.Add(time.Hour), IdempotencyKey: "a@2026-11-22T01:00:00Z", Mode: ledger.ModeScheduled})
			st.Apply(&ledger.Event{Event: ledger.ApprovalApproved, ScheduleID: "a", Slot: t0.Add(time.Hour), IdempotencyKey: "a@2026-11-22T01:00:00Z", By: "octocat"})
		}, "a:approved:01:00 a:slot:03:00 "},
		{"an approval of a slot ahead waits for it", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.ApprovalApproved, ScheduleID: "a", Slot: t0.Add(4 * time.Hour), IdempotencyKey: "a@2026-11-22T04:00:00Z",
				Mode: ledger.ModeScheduled, By: "octocat"})
		}, ""},
		{"an approved rollback is no run", []*model.Schedule{hourly("a")}, func(st *state.State) {
			created(st, "a", t0)
			st.Apply(&ledger.Event{Event: ledger.ApprovalApproved, ScheduleID: "a", Slot: t0.Add(time.Hour), IdempotencyKey: "a@2026-11-22T01:00:00Z#rollback",
				By: "octocat", Detail: json.RawMessage(`{"rollback":true}`)})
		}, "a:slot:03:00 "},
		{"too late for the window: missed", []*model.Schedule{hourly("a", func(s *model.Schedule) { s.Catchup.Window = model.Duration(10 * time.Second) })},
			func(st *state.State) { created(st, "a", t0) }, "a:missed:03:00 "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := state.New(now)
			if c.setup != nil {
				c.setup(st)
			}
			if got := kinds(Due(&model.Config{Schedules: c.sched}, st, now, Filter{})); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestFilterAndShards(t *testing.T) {
	a := hourly("a", func(s *model.Schedule) { s.Type, s.Tenant = "climate", "zora" })
	if !(Filter{ScheduleType: "climate", Tenant: "zora"}).Match(a) || (Filter{Tenant: "demo"}).Match(a) || (Filter{Only: []string{"b"}}).Match(a) {
		t.Fatal("filters")
	}
	counts := map[int]int{}
	for i := range 1000 {
		id := fmt.Sprintf("sch_%04d", i)
		k := shardOf(id, 4)
		if k != shardOf(id, 4) || k < 1 || k > 4 {
			t.Fatalf("shard of %s unstable or out of range: %d", id, k)
		}
		counts[k]++
	}
	for k := 1; k <= 4; k++ {
		if counts[k] < 200 {
			t.Fatalf("shards unbalanced: %v", counts)
		}
	}
	for _, bad := range []string{"0/4", "5/4", "x", "1/0"} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

// TestBoundsWithoutValidation: a schedule that never went through
// validation (every second, unbounded catch-up) still adds at most
// MaxSlotsPerSchedule slots, and its missed slots are counted exactly,
// however many.
func TestBoundsWithoutValidation(t *testing.T) {
	now := t0.Add(60 * 24 * time.Hour) // more than any catch-up window
	every, _ := cron.Every(time.Second)
	hostile := func(policy string) *model.Schedule {
		return hourly("h", func(s *model.Schedule) {
			s.Spec = every
			s.Catchup = model.Catchup{Policy: policy, Max: 100_000_000, Window: model.Duration(100_000 * time.Hour)}
		})
	}
	st := state.New(now)
	created(st, "h", t0)
	got := Due(&model.Config{Schedules: []*model.Schedule{hostile(model.CatchupAll)}}, st, now, Filter{})
	if len(got) != model.MaxSlotsPerSchedule {
		t.Fatalf("%d slots, want %d", len(got), model.MaxSlotsPerSchedule)
	}
	// Older than the window (31 days at most): (t0, now-31d], every second.
	if want := 29*86400 - 1; got[0].Missed != want || got[0].MissedMore {
		t.Errorf("missed %d (more %v), want %d", got[0].Missed, got[0].MissedMore, want)
	}
	got = Due(&model.Config{Schedules: []*model.Schedule{hostile(model.CatchupLatest)}}, st, now, Filter{})
	if want := 60*86400 - 1; len(got) != 1 || got[0].Missed != want {
		t.Fatalf("latest: %s missed %d, want %d", kinds(got), got[0].Missed, want)
	}

	// A last slot from an edited ledger, long ago: counted from the horizon.
	yearly, _ := cron.Parse("0 0 1 1 *", time.UTC)
	old := hourly("y", func(s *model.Schedule) { s.Spec = yearly })
	st = state.New(now)
	created(st, "y", time.Date(2, 1, 1, 0, 0, 0, 0, time.UTC))
	got = Due(&model.Config{Schedules: []*model.Schedule{old}}, st, now, Filter{})
	if len(got) != 1 || got[0].Kind != KindMissed || got[0].Missed > 5 || !got[0].MissedMore {
		t.Fatalf("yearly from year 1: %s missed %d (more %v)", kinds(got), got[0].Missed, got[0].MissedMore)
	}
}

// TestDueKeepsTheFirst: a plan holds at most MaxCandidatesPerRun
// candidates, exactly the first ones in order.
func TestDueKeepsTheFirst(t *testing.T) {
	now := t0.Add(24 * time.Hour)
	every, _ := cron.Every(time.Minute)
	cfg := &model.Config{}
	st := state.New(now)
	n := 2*model.MaxCandidatesPerRun/model.MaxCatchupMax + 7
	for i := range n {
		id := fmt.Sprintf("s%04d", i)
		cfg.Schedules = append(cfg.Schedules, hourly(id, func(s *model.Schedule) {
			s.Spec, s.Priority = every, i%10
			s.Catchup = model.Catchup{Policy: model.CatchupAll, Max: model.MaxCatchupMax, Window: model.Duration(24 * time.Hour)}
		}))
		created(st, id, t0)
	}
	var all []Candidate
	for _, s := range cfg.Schedules {
		all = append(all, candidates(s, st, nil, now)...)
	}
	slices.SortFunc(all, compare)
	got := Due(cfg, st, now, Filter{})
	if len(all) <= model.MaxCandidatesPerRun || len(got) != model.MaxCandidatesPerRun {
		t.Fatalf("%d due, plan of %d", len(all), len(got))
	}
	for i := range got {
		if got[i].Key != all[i].Key {
			t.Fatalf("candidate %d is %s, want %s", i, got[i].Key, all[i].Key)
		}
	}
}

// TestDroppedSlots: what the catch-up policy leaves out is counted and
// bounded by its oldest and newest slot, for the runner to record.
func TestDroppedSlots(t *testing.T) {
	now := t0.Add(10*time.Hour + 30*time.Second)
	for _, c := range []struct {
		policy       string
		window       time.Duration
		kind         Kind
		missed       int
		first, last  string
		slotsPlanned int
	}{
		{model.CatchupLatest, 24 * time.Hour, KindSlot, 9, "01:00", "09:00", 1},
		{model.CatchupSkip, 10 * time.Second, KindMissed, 9, "01:00", "09:00", 1},
		{model.CatchupAll, 3 * time.Hour, KindSlot, 7, "01:00", "07:00", 3},
	} {
		st := state.New(now)
		created(st, "a", t0)
		st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "a", Slot: t0, IdempotencyKey: "a@2026-11-22T00:00:00Z", Mode: ledger.ModeScheduled})
		s := hourly("a", func(s *model.Schedule) { s.Catchup.Policy, s.Catchup.Window = c.policy, model.Duration(c.window) })
		cs := Due(&model.Config{Schedules: []*model.Schedule{s}}, st, now, Filter{})
		if len(cs) != c.slotsPlanned {
			t.Fatalf("%s: %s", c.policy, kinds(cs))
		}
		got := cs[0]
		if got.Kind != c.kind || got.Missed != c.missed || got.MissedFirst.Format("15:04") != c.first || got.MissedLast.Format("15:04") != c.last {
			t.Errorf("%s: %s missed %d from %s to %s; want %s %d from %s to %s", c.policy, got.Kind, got.Missed,
				got.MissedFirst.Format("15:04"), got.MissedLast.Format("15:04"), c.kind, c.missed, c.first, c.last)
		}
		for _, later := range cs[1:] {
			if later.Missed != 0 {
				t.Errorf("%s: only the first candidate carries what was dropped", c.policy)
			}
		}
	}
}

// Only a fire time that no run decided, due (within the catch-up window)
// or the next one, can be approved before anything requested it: an
// approval further ahead would leave the slots before it undecided.
func TestUndecided(t *testing.T) {
	now := t0.Add(3*time.Hour + 30*time.Second)
	s := hourly("a")
	st := state.New(now)
	created(st, "a", t0)
	st.Apply(&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "a", Slot: t0.Add(time.Hour), IdempotencyKey: "a@2026-11-22T01:00:00Z",
		Mode: ledger.ModeScheduled, TS: t0.Add(time.Hour)})
	for slot, want := range map[time.Time]bool{
		t0.Add(time.Hour):                    false, // decided
		t0.Add(3 * time.Hour):                true,  // due
		t0.Add(4 * time.Hour):                true,  // the next
		t0.Add(5 * time.Hour):                false, // further ahead
		t0.Add(3*time.Hour + 30*time.Minute): false, // no fire time
		{}:                                   false,
	} {
		if got := Undecided(s, st, slot, now); got != want {
			t.Errorf("Undecided(%s) = %v, want %v", slot.Format("15:04"), got, want)
		}
	}
}
