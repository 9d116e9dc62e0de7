package state

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// A run whose clock was ahead decides slots in the future, and decided
// slots are never decided again: the schedules wait for that time. A
// clock correction (astra ledger correct-clock, the ledger.clock_corrected
// event) voids what was decided after a time a person names, at the time
// of the correction (its ts, by a clock held to a trusted time):
//
//   - every schedule's last decided slot (and when it was created or last
//     served) goes back to at most After, so its slots after After are new
//     again and the catch-up policy takes them up at the next run;
//   - own slots after After that a run claimed (ran, or may have) are
//     kept in Early: when their time comes they are recorded as
//     duplicates and not run, so a slot never runs twice;
//   - claims made after After end: their deadline is the correction, so
//     the next run records them lost and retries them per policy;
//   - retries due after the correction are due at once;
//   - approval requests made after After and still pending end; the next
//     slot asks again;
//   - manual and event keys completed after the correction count from it
//     (their retention is not a year ahead), and run starts after it no
//     longer count against rate limits.

// Correction is the Detail of ledger.clock_corrected: what was voided,
// for people and for replay. Early comes from the ledger's history (a
// replayed state does not hold which slots ran); replay derives the rest
// from the state again, and Voids lists it the same way.
type Correction struct {
	After  time.Time `json:"after"`
	Reason string    `json:"reason"`
	// Early are own slots after After that a run claimed: key -> slot.
	Early map[string]time.Time `json:"early,omitempty"`
	// Slots are the schedules whose last decided slot went back to
	// After: schedule id -> the slot it was.
	Slots     map[string]time.Time `json:"slots,omitempty"`
	Claims    []string             `json:"claims,omitempty"`    // keys of the claims that end
	Retries   []string             `json:"retries,omitempty"`   // keys of the retries due at once
	Approvals []string             `json:"approvals,omitempty"` // schedules whose pending request ends
	Keys      []string             `json:"keys,omitempty"`      // manual and event keys completed after the correction: done from it
	Actors    []string             `json:"actors,omitempty"`    // actors with run starts after the correction, which stop counting
}

// Empty reports whether the correction voids nothing.
func (c *Correction) Empty() bool {
	return len(c.Early) == 0 && len(c.Slots) == 0 && len(c.Claims) == 0 && len(c.Retries) == 0 && len(c.Approvals) == 0 &&
		len(c.Keys) == 0 && len(c.Actors) == 0
}

// Voids is what a correction at at, voiding what was decided after
// after, changes in s (besides Early, which it does not know).
func (s *State) Voids(after, at time.Time) Correction {
	c := Correction{After: after, Slots: map[string]time.Time{}}
	for _, id := range slices.Sorted(maps.Keys(s.Schedules)) {
		if sc := s.Schedules[id]; sc.LastSlot.After(after) {
			c.Slots[id] = sc.LastSlot
		}
	}
	for _, key := range slices.Sorted(maps.Keys(s.Open)) {
		switch o := s.Open[key]; {
		case o.Status == OpenClaimed && o.ClaimedAt.After(after):
			c.Claims = append(c.Claims, key)
		case o.Status == OpenRetry && o.RetryAt.After(at):
			c.Retries = append(c.Retries, key)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.Approvals)) {
		if a := s.Approvals[id]; a.Status == ledger.StatusPending && a.RequestedAt.After(after) {
			c.Approvals = append(c.Approvals, id)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Done)) {
		if s.Done[k].After(at) {
			c.Keys = append(c.Keys, k)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(s.ActorRuns)) {
		if slices.ContainsFunc(s.ActorRuns[a], func(t time.Time) bool { return t.After(at) }) {
			c.Actors = append(c.Actors, a)
		}
	}
	return c
}

// correct applies a ledger.clock_corrected event.
func (s *State) correct(e *ledger.Event) {
	var c Correction
	if json.Unmarshal(e.Detail, &c) != nil || c.After.IsZero() {
		return // a correction we cannot read changes nothing
	}
	at, v := e.TS, s.Voids(c.After, e.TS)
	for id := range v.Slots {
		s.Schedules[id].LastSlot = c.After
	}
	for _, sc := range s.Schedules {
		for _, t := range []*time.Time{&sc.DecidedAt, &sc.CreatedAt, &sc.DisabledAt} {
			if t.After(c.After) {
				*t = c.After
			}
		}
	}
	for _, key := range v.Claims {
		o := *s.Open[key]
		o.Deadline = at
		s.putOpen(key, &o)
	}
	for _, key := range v.Retries {
		o := *s.Open[key]
		o.RetryAt = at
		s.putOpen(key, &o)
	}
	for _, id := range v.Approvals {
		delete(s.Approvals, id)
	}
	for _, k := range v.Keys {
		s.Done[k] = at
	}
	for _, a := range v.Actors {
		s.ActorRuns[a] = slices.DeleteFunc(s.ActorRuns[a], func(t time.Time) bool { return t.After(at) })
	}
	maps.Copy(s.Early, c.Early)
	s.view(s.Now) // the newest run start, and what open claims hold
}

// RanEarly says whether a run claimed a schedule's own slot key before a
// clock correction voided its decisions: it is not run again.
func (s *State) RanEarly(key string) bool {
	_, ok := s.Early[key]
	return ok
}

// idOf is the schedule id of an own slot's key, "<id>@<slot>".
func idOf(key string) string {
	return key[:max(len(key)-len(ledger.TimeLayout)-1, 0)]
}
