// Package plan works out what is due: new cron and interval slots under
// each schedule's catch-up policy, retries whose backoff has passed, claims
// whose runner died, and approved requests waiting to run. It is a pure
// function of configuration, replayed state and time; gating happens later,
// one candidate at a time, so that each decision sees the previous ones.
package plan

import (
	"cmp"
	"container/heap"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Kind says why a candidate is in the plan.
type Kind string

const (
	KindSlot     Kind = "slot"     // a new scheduled slot
	KindMissed   Kind = "missed"   // a slot too late to run: record it, run nothing
	KindRetry    Kind = "retry"    // a failed slot whose backoff has passed
	KindStale    Kind = "stale"    // a retry due longer ago than the catch-up window: dead-letter it, run nothing
	KindLost     Kind = "lost"     // a claim whose runner died: record it as failed
	KindApproved Kind = "approved" // an approved request waiting to run
	KindManual   Kind = "manual"   // astra run
	KindEvent    Kind = "event"    // astra trigger
	KindChain    Kind = "chain"    // chain_next after another run
	KindEarly    Kind = "early"    // a slot a run took early, at a clock a correction voided: record it, run nothing
)

// Candidate is one slot the runner should consider.
type Candidate struct {
	Kind     Kind
	Schedule *model.Schedule
	Slot     time.Time
	Key      string
	Mode     string // scheduled | manual | event
	Attempt  int    // 1 for a first run
	Missed   int    // older slots dropped by the catch-up policy, counted exactly (within countHorizon)
	// MissedMore: the last decided slot is older than the counting
	// horizon (5 years), so Missed counts only that far back.
	MissedMore bool
	// MissedFirst and MissedLast are the oldest and newest of those slots.
	MissedFirst, MissedLast time.Time
	Open                    *state.Open

	rank   int       // places its schedule takes before it in this plan
	served time.Time // when a run last decided a slot of its schedule
}

// takesPlace reports whether a candidate counts against a run's limit:
// the kinds that may run a tool. The others only record a decision.
func (k Kind) takesPlace() bool {
	return k == KindSlot || k == KindRetry || k == KindApproved
}

// Filter narrows a plan (run-due flags).
type Filter struct {
	ScheduleType string
	Tenant       string
	Only         []string // ids or names
	Shard, Of    int      // shard K of N (1-based); 0 = all
}

// Match reports whether a schedule passes the filter.
func (f Filter) Match(s *model.Schedule) bool {
	if f.ScheduleType != "" && s.Type != f.ScheduleType {
		return false
	}
	if f.Tenant != "" && s.Tenant != f.Tenant {
		return false
	}
	if len(f.Only) > 0 && !slices.Contains(f.Only, s.ID) && !slices.Contains(f.Only, s.Name) {
		return false
	}
	return f.Of <= 1 || shardOf(s.ID, f.Of) == f.Shard
}

// shardOf is the stable 1-based shard of a schedule id among n shards.
func shardOf(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32()%uint32(n)) + 1
}

// ParseShard reads "K/N".
func ParseShard(s string) (k, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("--shard %q: want K/N with 1 <= K <= N, e.g. 2/4", s)
	}
	return k, n, nil
}

// Due lists the candidates at now in the order a run takes them (see
// compare): the first model.MaxCandidatesPerRun of them.
func Due(cfg *model.Config, st *state.State, now time.Time, f Filter) []Candidate {
	openKeys := openBySchedule(st)
	first := &firstN{n: model.MaxCandidatesPerRun}
	for _, s := range cfg.Schedules {
		if f.Match(s) {
			first.add(candidates(s, st, openKeys[s.ID], now))
		}
	}
	out := first.items
	slices.SortFunc(out, compare)
	return out
}

// openBySchedule lists the open keys of each schedule, in key order, so
// candidates come out the same way every time.
func openBySchedule(st *state.State) map[string][]string {
	keys := make([]string, 0, len(st.Open))
	for k := range st.Open {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	openKeys := map[string][]string{}
	for _, k := range keys {
		id := st.Open[k].ScheduleID
		openKeys[id] = append(openKeys[id], k)
	}
	return openKeys
}

// candidates are one schedule's candidates at now, oldest slot first,
// each ranked by how many places of the schedule come before it.
func candidates(s *model.Schedule, st *state.State, keys []string, now time.Time) []Candidate {
	cs := open(s, st, keys, now)
	if s.Enabled {
		for _, c := range slots(s, st, now) {
			if c.Kind == KindSlot && st.RanEarly(c.Key) {
				c.Kind = KindEarly // it ran already: a slot runs once
			}
			cs = append(cs, c)
		}
	} else {
		// Disabled: nothing of it runs. Its retries and an approved run
		// wait until it is enabled again; a lost claim is still recorded.
		cs = slices.DeleteFunc(cs, func(c Candidate) bool { return c.Kind != KindLost })
	}
	slices.SortFunc(cs, func(a, b Candidate) int {
		if c := a.Slot.Compare(b.Slot); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	var served time.Time
	if sc := st.Schedules[s.ID]; sc != nil {
		served = sc.DecidedAt
	}
	rank := 0
	for i := range cs {
		cs[i].served = served
		if cs[i].Kind.takesPlace() {
			cs[i].rank = rank
			rank++
		}
	}
	return cs
}

// compare orders candidates: highest priority first; within a priority,
// round-robin over schedules (every schedule's first place before any
// schedule's second, and so on), the schedule served longest ago first;
// then the oldest slot. A schedule's own slots run oldest first. So one
// schedule's backlog cannot take the places of others of its priority:
// with N schedules of a priority due and a limit of L places, each gets
// one within ceil(N/L) runs. Keys are unique, so the order is total.
func compare(a, b Candidate) int {
	if c := cmp.Compare(b.Schedule.Priority, a.Schedule.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := a.served.Compare(b.served); c != 0 {
		return c
	}
	if c := a.Slot.Compare(b.Slot); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Schedule.ID, b.Schedule.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// firstN keeps the first n candidates in compare order, in a heap with the
// last of them on top, so a plan stays small however much is due. What is
// left out is due again next run: new slots are found from each schedule's
// last recorded slot, open slots from the ledger.
type firstN struct {
	n     int
	items []Candidate
}

func (f *firstN) add(cs []Candidate) {
	for _, c := range cs {
		switch {
		case len(f.items) < f.n:
			heap.Push(f, c)
		case compare(c, f.items[0]) < 0:
			f.items[0] = c
			heap.Fix(f, 0)
		}
	}
}

func (f *firstN) Len() int           { return len(f.items) }
func (f *firstN) Less(i, j int) bool { return compare(f.items[i], f.items[j]) > 0 }
func (f *firstN) Swap(i, j int)      { f.items[i], f.items[j] = f.items[j], f.items[i] }
func (f *firstN) Push(x any)         { f.items = append(f.items, x.(Candidate)) }
func (f *firstN) Pop() any {
	c := f.items[len(f.items)-1]
	f.items = f.items[:len(f.items)-1]
	return c
}

// open turns a schedule's open slots into candidates: lost claims, retries
// due, and an approved request.
func open(s *model.Schedule, st *state.State, keys []string, now time.Time) []Candidate {
	var out []Candidate
	for _, key := range keys {
		o := st.Open[key]
		// A claim's attempt is the one that was lost; a retry's is the next.
		c := Candidate{Schedule: s, Slot: o.Slot, Key: key, Mode: o.Mode, Attempt: o.Attempt, Open: o}
		switch {
		case o.Status == state.OpenClaimed && !o.Deadline.IsZero() && now.After(o.Deadline):
			c.Kind = KindLost
		case o.Status == state.OpenRetry && !now.Before(o.RetryAt):
			// A retry is a late run like any other: beyond the catch-up
			// window it goes to the dead letter (a person may release it)
			// rather than run long after anyone expected it. A retry a
			// person asked for runs whenever the next run comes.
			c.Kind = KindRetry
			if !o.Released && now.Sub(o.RetryAt) > Window(s) {
				c.Kind = KindStale
			}
		default:
			continue // a live claim or a retry still backing off
		}
		out = append(out, c)
	}
	// An approved run is due at its slot (an approval may name a slot
	// ahead); an approved rollback runs only when a person asks for it.
	if a := st.Approvals[s.ID]; a != nil && a.Status == ledger.StatusApproved && !a.Rollback && !a.Slot.After(now) {
		if _, busy := st.Open[a.Key]; !busy {
			mode := a.Mode
			if mode == "" {
				mode = ledger.ModeScheduled
			}
			out = append(out, Candidate{Kind: KindApproved, Schedule: s, Slot: a.Slot, Key: a.Key, Mode: mode, Attempt: 1})
		}
	}
	return out
}

// Undecided reports whether slot is a fire time of s that no run has
// decided yet, due at now (within its catch-up window) or the next one.
// Only such a slot can be approved before anything requested it: an
// approval decides its slot, so one further ahead would pass over the
// slots before it.
func Undecided(s *model.Schedule, st *state.State, slot, now time.Time) bool {
	if s.Spec == nil || slot.IsZero() || !s.Spec.Next(slot.Add(-time.Second)).Equal(slot) {
		return false
	}
	return slot.After(base(s, st)) && !slot.Before(now.Add(-Window(s))) && !slot.After(s.Spec.Next(now))
}

// countHorizon is how far back missed slots are counted: as far as the
// cron walk looks for a previous slot. A last slot older than that (a
// schedule disabled for years, an edited ledger) costs no more than this
// walk, and the count says it is a lower bound (MissedMore).
const countHorizon = 5 * 366 * 24 * time.Hour

// Window is how late a run of s may start: its catch-up window, at most
// model.MaxCatchupWindow whatever the configuration says.
func Window(s *model.Schedule) time.Duration {
	return min(s.Catchup.Window.D(), model.MaxCatchupWindow)
}

// base is the instant after which a schedule's slots are new: its last
// decided slot, else when it was first seen; zero for a schedule never
// seen.
func base(s *model.Schedule, st *state.State) time.Time {
	sc := st.Schedules[s.ID]
	if sc == nil {
		return time.Time{}
	}
	if sc.LastSlot.IsZero() {
		return sc.CreatedAt
	}
	return sc.LastSlot
}

// slots returns the new scheduled slots of one schedule under its catch-up
// policy (docs/design.md, "Catch-up"): at most model.MaxSlotsPerSchedule,
// even for a configuration that never went through validation; slots too
// old to run are counted exactly (within countHorizon).
func slots(s *model.Schedule, st *state.State, now time.Time) []Candidate {
	if sc := st.Schedules[s.ID]; (sc == nil || sc.LastSlot.IsZero()) && s.RunImmediately {
		// No slot of its own recorded yet: run_immediately runs once, now,
		// whether the schedule came with the repository's first run or was
		// added later (its schedule.created is recorded before planning).
		slot := now.Truncate(time.Minute)
		return []Candidate{{Kind: KindSlot, Schedule: s, Slot: slot, Key: ledger.SlotKey(s.ID, slot), Mode: ledger.ModeScheduled, Attempt: 1}}
	}
	base := base(s, st)
	if base.IsZero() {
		return nil // first sight: nothing before now is due
	}
	if s.Spec == nil || !now.After(base) {
		return nil // nothing new: no need to look for the latest slot
	}
	latest := s.Spec.Prev(now)
	if latest.IsZero() || !latest.After(base) {
		return nil
	}
	countFrom, more := base, false
	if h := now.Add(-countHorizon); countFrom.Before(h) {
		countFrom, more = h, true
	}
	mk := func(kind Kind, slot time.Time) Candidate {
		return Candidate{Kind: kind, Schedule: s, Slot: slot, Key: ledger.SlotKey(s.ID, slot), Mode: ledger.ModeScheduled, Attempt: 1}
	}
	window := Window(s)
	switch s.Catchup.Policy {
	case model.CatchupAll:
		from := base
		if edge := now.Add(-window); from.Before(edge) {
			from = edge.Add(-time.Nanosecond)
		}
		var out []Candidate
		for _, t := range s.Spec.Slots(from, now, min(s.Catchup.Max, model.MaxSlotsPerSchedule)) {
			out = append(out, mk(KindSlot, t))
		}
		if len(out) == 0 {
			return []Candidate{mk(KindMissed, latest)}
		}
		dropped(s, &out[0], countFrom, from, more)
		return out
	default: // latest, skip: only the newest slot, if not too late
		c := mk(KindSlot, latest)
		if now.Sub(latest) > window {
			c.Kind = KindMissed
		}
		dropped(s, &c, countFrom, latest.Add(-time.Nanosecond), more)
		return []Candidate{c}
	}
}

// Disabled is what a schedule enabled again at now left behind while it was
// disabled: the slots after its last decided one up to now, none of which
// is due later. Slot and Key are the newest of them, which the runner
// records as skipped (reason disabled) so that the catch-up policy applies
// from now; Missed counts them (within the counting horizon), MissedFirst
// and MissedLast bound them. ok is false when no slot fell.
func Disabled(s *model.Schedule, st *state.State, now time.Time) (c Candidate, ok bool) {
	b := base(s, st)
	if s.Spec == nil || b.IsZero() || !now.After(b) {
		return c, false
	}
	latest := s.Spec.Prev(now)
	if latest.IsZero() || !latest.After(b) {
		return c, false
	}
	countFrom, more := b, false
	if h := now.Add(-countHorizon); countFrom.Before(h) {
		countFrom, more = h, true
	}
	c = Candidate{Kind: KindMissed, Schedule: s, Slot: latest, Key: ledger.SlotKey(s.ID, latest), Mode: ledger.ModeScheduled, Attempt: 1}
	dropped(s, &c, countFrom, latest, more)
	return c, true
}

// dropped sets what c's catch-up policy leaves out: the slots in
// (after, until], counted exactly, and the oldest and newest of them; more
// says after is the counting horizon, not the last decided slot.
func dropped(s *model.Schedule, c *Candidate, after, until time.Time, more bool) {
	c.Missed = s.Spec.Count(after, until)
	if c.Missed > 0 {
		c.MissedMore = more
		c.MissedFirst, c.MissedLast = s.Spec.Next(after), s.Spec.Prev(until)
	}
}
