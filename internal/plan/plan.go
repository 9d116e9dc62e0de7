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
	KindLost     Kind = "lost"     // a claim whose runner died: record it as failed
	KindApproved Kind = "approved" // an approved request waiting to run
	KindManual   Kind = "manual"   // astra run
	KindEvent    Kind = "event"    // astra trigger
	KindChain    Kind = "chain"    // chain_next after another run
)

// Candidate is one slot the runner should consider.
type Candidate struct {
	Kind     Kind
	Schedule *model.Schedule
	Slot     time.Time
	Key      string
	Mode     string // scheduled | manual | event
	Attempt  int    // 1 for a first run
	Missed   int    // older slots dropped by the catch-up policy (a count above model.MaxMissedCount means more)
	// MissedFirst and MissedLast are the oldest and newest of those slots.
	MissedFirst, MissedLast time.Time
	Open                    *state.Open
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

// Due lists the candidates at now, highest priority first, then oldest
// slot: the first model.MaxCandidatesPerRun of them.
func Due(cfg *model.Config, st *state.State, now time.Time, f Filter) []Candidate {
	// Open slots by schedule, in key order so candidates come out the same
	// way every time.
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
	first := &firstN{n: model.MaxCandidatesPerRun}
	for _, s := range cfg.Schedules {
		if !f.Match(s) {
			continue
		}
		first.add(open(s, st, openKeys[s.ID], now))
		if s.Enabled {
			first.add(slots(s, st, now))
		}
	}
	out := first.items
	slices.SortFunc(out, compare)
	return out
}

// compare orders candidates: highest priority first, then oldest slot.
// Keys are unique, so the order is total.
func compare(a, b Candidate) int {
	if c := cmp.Compare(b.Schedule.Priority, a.Schedule.Priority); c != 0 {
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
			c.Kind = KindRetry
		default:
			continue // a live claim or a retry still backing off
		}
		out = append(out, c)
	}
	if a := st.Approvals[s.ID]; a != nil && a.Status == ledger.StatusApproved {
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

// countHorizon is how far back missed slots are counted: as far as the
// cron walk looks for a previous slot. A last slot older than that (an
// edited ledger) costs no more than this walk.
const countHorizon = 5 * 366 * 24 * time.Hour

// slots returns the new scheduled slots of one schedule under its catch-up
// policy (docs/design.md, "Catch-up"): at most model.MaxSlotsPerSchedule,
// and at most model.MaxMissedCount+1 missed slots counted, even for a
// configuration that never went through validation.
func slots(s *model.Schedule, st *state.State, now time.Time) []Candidate {
	sc := st.Schedules[s.ID]
	base := time.Time{}
	if sc != nil {
		base = sc.LastSlot
	}
	if base.IsZero() && s.RunImmediately {
		// No slot of its own recorded yet: run_immediately runs once, now,
		// whether the schedule came with the repository's first run or was
		// added later (its schedule.created is recorded before planning).
		slot := now.Truncate(time.Minute)
		return []Candidate{{Kind: KindSlot, Schedule: s, Slot: slot, Key: ledger.SlotKey(s.ID, slot), Mode: ledger.ModeScheduled, Attempt: 1}}
	}
	if base.IsZero() && sc != nil {
		base = sc.CreatedAt
	}
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
	mk := func(kind Kind, slot time.Time, missed int) Candidate {
		return Candidate{Kind: kind, Schedule: s, Slot: slot, Key: ledger.SlotKey(s.ID, slot), Mode: ledger.ModeScheduled, Attempt: 1, Missed: missed}
	}
	window := min(s.Catchup.Window.D(), model.MaxCatchupWindow)
	tooLate := now.Sub(latest) > window
	countFrom := base
	if h := now.Add(-countHorizon); countFrom.Before(h) {
		countFrom = h
	}
	switch s.Catchup.Policy {
	case model.CatchupAll:
		from := base
		if edge := now.Add(-window); from.Before(edge) {
			from = edge.Add(-time.Nanosecond)
		}
		var out []Candidate
		for _, t := range s.Spec.Slots(from, now, min(s.Catchup.Max, model.MaxSlotsPerSchedule)) {
			out = append(out, mk(KindSlot, t, 0))
		}
		if len(out) == 0 {
			return []Candidate{mk(KindMissed, latest, 0)}
		}
		dropped(s, &out[0], countFrom, from)
		return out
	default: // latest, skip: only the newest slot, if not too late
		c := mk(KindSlot, latest, 0)
		if tooLate {
			c.Kind = KindMissed
		}
		dropped(s, &c, countFrom, latest.Add(-time.Nanosecond))
		return []Candidate{c}
	}
}

// dropped sets what c's catch-up policy leaves out: the slots in
// (after, until], counted up to model.MaxMissedCount+1, and the oldest and
// newest of them.
func dropped(s *model.Schedule, c *Candidate, after, until time.Time) {
	c.Missed = s.Spec.Count(after, until, model.MaxMissedCount+1)
	if c.Missed > 0 {
		c.MissedFirst, c.MissedLast = s.Spec.Next(after), s.Spec.Prev(until)
	}
}
