package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// tick plays one run at now as the runner takes a plan: the first limit
// candidates that take a place run (claimed and completed at now), missed
// slots are recorded. It returns the schedules that ran, in order.
func tick(cfg *model.Config, st *state.State, now time.Time, limit int) []string {
	st.Now = now
	var ran []string
	for _, c := range Due(cfg, st, now, Filter{}) {
		switch {
		case c.Kind == KindMissed:
			st.Apply(&ledger.Event{TS: now, Event: ledger.RunSkipped, ScheduleID: c.Schedule.ID, Slot: c.Slot, IdempotencyKey: c.Key, Mode: c.Mode, Reason: ledger.ReasonMissed})
		case c.Kind.takesPlace() && len(ran) < limit:
			for _, k := range []ledger.Kind{ledger.RunClaimed, ledger.RunCompleted} {
				st.Apply(&ledger.Event{TS: now, Event: k, ScheduleID: c.Schedule.ID, Slot: c.Slot, IdempotencyKey: c.Key, Mode: c.Mode, ExpiresAt: now.Add(time.Hour)})
			}
			ran = append(ran, c.Schedule.ID)
		}
	}
	return ran
}

func backlog(id string) *model.Schedule {
	return hourly(id, func(s *model.Schedule) {
		s.Catchup = model.Catchup{Policy: model.CatchupAll, Max: model.MaxCatchupMax, Window: model.Duration(model.MaxCatchupWindow)}
	})
}

// TestFairCatchUp: after a year without runs, schedules with a month of
// catch-up backlog each (catchup: all, the longest window) share a run's
// places with the other schedules of their priority: every due schedule
// runs within ceil(N/L) runs, and each backlog keeps draining. A higher
// priority still comes first.
func TestFairCatchUp(t *testing.T) {
	cfg := &model.Config{}
	st := state.New(t0)
	for i := range 6 {
		cfg.Schedules = append(cfg.Schedules, backlog(fmt.Sprintf("all%d", i)))
	}
	for i := range 4 {
		cfg.Schedules = append(cfg.Schedules, hourly(fmt.Sprintf("latest%d", i)))
	}
	cfg.Schedules = append(cfg.Schedules, hourly("urgent", func(s *model.Schedule) { s.Priority = 9 }))
	for _, s := range cfg.Schedules {
		created(st, s.ID, t0)
	}
	const limit = 3
	now := t0.AddDate(1, 0, 0).Add(30 * time.Second)
	first := map[string]int{}
	var log []string
	for n := 1; n <= 8; n++ {
		ran := tick(cfg, st, now, limit)
		log = append(log, strings.Join(ran, ","))
		for _, id := range ran {
			if _, ok := first[id]; !ok {
				first[id] = n
			}
		}
		now = now.Add(time.Minute)
	}
	// urgent (priority 9) takes one place in the first run; the ten
	// schedules of priority 5 share the rest: 2, then 3 a run.
	bound := 1 + (10-2+limit-1)/limit
	for _, s := range cfg.Schedules {
		if n, ok := first[s.ID]; !ok || n > bound {
			t.Errorf("%s first ran in run %d, want by run %d; runs: %q", s.ID, n, bound, log)
		}
	}
	// Each backlog still drains in slot order, one place at a time while
	// others wait: no run gives one schedule two places while another of
	// its priority that is due has none.
	for i, l := range log[:bound] {
		seen := map[string]bool{}
		for _, id := range strings.Split(l, ",") {
			if seen[id] {
				t.Errorf("run %d gave %s two places while others waited: %q", i+1, id, l)
			}
			seen[id] = true
		}
	}
	if got := st.Schedules["all0"].LastSlot; !got.Before(now.Add(-24 * time.Hour)) {
		t.Errorf("all0's backlog ran to %s in %d runs: it took places of others", got, len(log))
	}
}

// TestFairCatchUpAlone: a backlog with nothing else due takes every place.
func TestFairCatchUpAlone(t *testing.T) {
	cfg := &model.Config{Schedules: []*model.Schedule{backlog("all")}}
	st := state.New(t0)
	created(st, "all", t0)
	if ran := tick(cfg, st, t0.Add(10*time.Hour+time.Second), 4); strings.Join(ran, ",") != "all,all,all,all" {
		t.Fatalf("ran %q", ran)
	}
	if got := st.Schedules["all"].LastSlot; !got.Equal(t0.Add(4 * time.Hour)) {
		t.Fatalf("last slot %s: not oldest first", got)
	}
}

// TestStaleRetry: a retry due longer ago than the catch-up window is not
// run but dead-lettered; one a person released runs whenever it comes.
func TestStaleRetry(t *testing.T) {
	now := t0.AddDate(0, 2, 0)
	cfg := &model.Config{Schedules: []*model.Schedule{hourly("a")}}
	retry := func(st *state.State, at time.Time) {
		st.Apply(&ledger.Event{Event: ledger.RunRetryScheduled, ScheduleID: "a", Slot: t0, IdempotencyKey: ledger.SlotKey("a", t0),
			Mode: ledger.ModeScheduled, Attempt: 2, RetryAt: at})
	}
	for _, c := range []struct {
		name  string
		setup func(*state.State)
		want  Kind
	}{
		{"within the window", func(st *state.State) { retry(st, now.Add(-23*time.Hour)) }, KindRetry},
		{"beyond the window", func(st *state.State) { retry(st, now.Add(-25*time.Hour)) }, KindStale},
		{"released by a person", func(st *state.State) {
			st.Apply(&ledger.Event{Event: ledger.RunDeadLettered, ScheduleID: "a", Slot: t0, IdempotencyKey: ledger.SlotKey("a", t0), Mode: ledger.ModeScheduled, TS: t0})
			st.Apply(&ledger.Event{Event: ledger.DeadLetterReleased, ScheduleID: "a", IdempotencyKey: ledger.SlotKey("a", t0), TS: now.AddDate(0, 0, -20)})
		}, KindRetry},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := state.New(now)
			c.setup(st)
			got := Due(cfg, st, now, Filter{})
			if len(got) == 0 || got[0].Key != ledger.SlotKey("a", t0) || got[0].Kind != c.want {
				t.Fatalf("got %s, want the retry as %s", kinds(got), c.want)
			}
		})
	}
}

// upcomingRetry is an hourly schedule a at t0+3h, whose 01:00 slot waits
// for a retry a minute from now.
func upcomingRetry() (*model.Schedule, *state.State, time.Time) {
	now := t0.Add(3*time.Hour + 30*time.Second)
	st := state.New(now)
	created(st, "a", t0)
	st.Apply(&ledger.Event{Event: ledger.RunRetryScheduled, ScheduleID: "a", Slot: t0.Add(time.Hour), IdempotencyKey: ledger.SlotKey("a", t0.Add(time.Hour)),
		Mode: ledger.ModeScheduled, Attempt: 2, RetryAt: now.Add(time.Minute)})
	return hourly("a"), st, now
}

// TestUpcoming: what `schedules next` shows is what a run does: slots due
// now, retries waiting, the next fire times.
func TestUpcoming(t *testing.T) {
	s, st, now := upcomingRetry()
	u := UpcomingOf(s, st, now, 2)
	if kinds(u.Due) != "a:slot:03:00 " || len(u.Waiting) != 1 || u.Waiting[0].RetryAt != now.Add(time.Minute) || u.Waiting[0].Key != "a@2026-11-22T01:00:00Z" {
		t.Fatalf("due %s, waiting %v", kinds(u.Due), u.Waiting)
	}
	if len(u.Next) != 2 || !u.Next[0].Equal(t0.Add(4*time.Hour)) || !u.Ahead.IsZero() {
		t.Fatalf("next %v ahead %s", u.Next, u.Ahead)
	}
}

// TestUpcomingAfterAClockAhead: after a run whose clock was a year ahead,
// no slot is due until the one it decided, as a run would see it, and the
// clock warning says so.
func TestUpcomingAfterAClockAhead(t *testing.T) {
	s, st, now := upcomingRetry()
	ahead := t0.AddDate(1, 0, 0).Add(5 * time.Hour)
	st.Apply(&ledger.Event{TS: ahead, Event: ledger.RunCompleted, ScheduleID: "a", Slot: ahead, IdempotencyKey: ledger.SlotKey("a", ahead), Mode: ledger.ModeScheduled})
	u := UpcomingOf(s, st, now, 1)
	if len(u.Due) != 0 || !u.Ahead.Equal(ahead) || len(u.Next) != 1 || !u.Next[0].Equal(ahead.Add(time.Hour)) {
		t.Fatalf("due %s, ahead %s, next %v", kinds(u.Due), u.Ahead, u.Next)
	}
	if got := Due(&model.Config{Schedules: []*model.Schedule{s}}, st, now, Filter{}); len(got) != 0 {
		t.Fatalf("a run would take %s", kinds(got))
	}
	w := ClockWarnings(&model.Config{Schedules: []*model.Schedule{s}}, st, ahead, now)
	if len(w) != 1 || !strings.Contains(w[0], "behind the ledger's newest event (2027-11-22T05:00:00Z)") ||
		!strings.Contains(w[0], "a until 2027-11-22T05:00:00Z") {
		t.Fatalf("warnings %q", w)
	}
}

// TestClockWarnings: a clock a little behind (runners differ) or shortly
// after the ledger says nothing; far behind or far ahead, it says so.
func TestClockWarnings(t *testing.T) {
	cfg := &model.Config{Schedules: []*model.Schedule{hourly("a")}}
	st := state.New(t0)
	for _, c := range []struct {
		now  time.Time
		want string
	}{
		{t0.Add(-30 * time.Second), ""},
		{t0.Add(20 * 24 * time.Hour), ""},
		{t0.Add(-2 * time.Hour), "is 2h0m0s behind the ledger's newest event (2026-11-22T00:00:00Z)"},
		{t0.AddDate(1, 0, 0), "is 365 days after the ledger's newest event (2026-11-22T00:00:00Z), longer than any catch-up window"},
	} {
		got := strings.Join(ClockWarnings(cfg, st, t0, c.now), "\n")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("at %s: %q, want %q", c.now, got, c.want)
		}
	}
	if w := ClockWarnings(cfg, st, time.Time{}, t0); w != nil {
		t.Errorf("an empty ledger: %q", w)
	}
}

// BenchmarkDueAfterOutage plans the first run after a year without runs:
// a thousand hourly schedules, half with a month of catch-up backlog, in
// a zone with daylight saving (the exact missed counts walk a year each).
func BenchmarkDueAfterOutage(b *testing.B) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Skip(err)
	}
	spec, _ := cron.Parse("*/5 * * * *", loc)
	cfg := &model.Config{}
	st := state.New(t0)
	for i := range 1000 {
		s := hourly(fmt.Sprintf("s%04d", i), func(s *model.Schedule) { s.Spec = spec })
		if i%2 == 0 {
			s.Catchup = model.Catchup{Policy: model.CatchupAll, Max: model.MaxCatchupMax, Window: model.Duration(model.MaxCatchupWindow)}
		}
		cfg.Schedules = append(cfg.Schedules, s)
		created(st, s.ID, t0)
	}
	now := t0.AddDate(1, 0, 0)
	for b.Loop() {
		Due(cfg, st, now, Filter{})
	}
}
