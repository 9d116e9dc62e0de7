package introspect

import (
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// Next is one schedule in `astra schedules next`: what a run-due at now
// would take up, what waits, and the fire times after that.
type Next struct {
	ID       string      `json:"id"`
	Name     string      `json:"name"`
	Trigger  string      `json:"trigger"`
	Timezone string      `json:"timezone"`
	Due      []Due       `json:"due,omitempty"`     // what a run at now takes up
	Waiting  []Wait      `json:"waiting,omitempty"` // retries backing off, runs in progress
	Next     []time.Time `json:"next"`
	// LastDecided is the last decided slot when it lies after now: no
	// slot before it is due.
	LastDecided time.Time `json:"last_decided_slot,omitzero"`
	Held        string    `json:"held,omitempty"` // a gate that holds the schedule now
	// Disabled: enabled: false. Its slots are not due now or later, its
	// retries wait; enabled again, it resumes at its next slot.
	Disabled bool `json:"disabled,omitempty"`
}

// Due is a candidate a run at now takes up.
type Due struct {
	Slot    time.Time `json:"slot"`
	Key     string    `json:"idempotency_key"`
	Kind    string    `json:"kind"`
	Attempt int       `json:"attempt"`
	Note    string    `json:"note"`
}

// Wait is an open slot that is not due yet.
type Wait struct {
	Key    string    `json:"idempotency_key"`
	Slot   time.Time `json:"slot"`
	Status string    `json:"status"` // retry | claimed
	At     time.Time `json:"at"`     // when the retry is due, or the claim's deadline
	Note   string    `json:"note"`
}

// Upcoming describes what run-due will do about each of schedules at now,
// from the planner's own answer (plan.UpcomingOf) and the gates as they
// stand, with up to count fire times each. A schedule without a time
// trigger that has nothing due or waiting is left out; a disabled one is
// shown as disabled, with what waits for it.
func Upcoming(cfg *model.Config, st *state.State, schedules []*model.Schedule, now time.Time, count int) []Next {
	var out []Next
	for _, s := range schedules {
		n := upcoming(cfg, st, s, now, count)
		if s.Spec == nil && len(n.Due) == 0 && len(n.Waiting) == 0 {
			continue
		}
		out = append(out, n)
	}
	return out
}

// dueNotes say what a run does with each kind of candidate.
var dueNotes = map[plan.Kind]string{
	plan.KindSlot:     "due now",
	plan.KindApproved: "due now: approved",
	plan.KindMissed:   "too late for the catch-up window: recorded as missed, not run",
	plan.KindLost:     "its run stopped without an outcome: recorded as lost, then retried",
	plan.KindStale:    "a retry too late for the catch-up window: dead-lettered, not run",
	plan.KindEarly:    "ran early, at a clock a correction voided: recorded as a duplicate, not run again",
}

func upcoming(cfg *model.Config, st *state.State, s *model.Schedule, now time.Time, count int) Next {
	u := plan.UpcomingOf(s, st, now, count)
	n := Next{ID: s.ID, Name: s.Name, Trigger: TriggerOf(s), Timezone: s.Timezone, Next: u.Next, LastDecided: u.Ahead, Disabled: !s.Enabled}
	if n.Next == nil {
		n.Next = []time.Time{}
	}
	d := gate.Check(gate.Input{Schedule: s, Policies: &cfg.Policies, State: st, Now: now})
	switch d.Action {
	case gate.Skip:
		n.Held = d.Reason + ": " + d.Detail
	case gate.NeedApproval:
		n.Held = d.Detail
	}
	for _, c := range u.Due {
		note := dueNotes[c.Kind]
		if c.Kind == plan.KindRetry {
			note = fmt.Sprintf("due now: attempt %d", c.Attempt)
		}
		if c.Missed > 0 {
			note += fmt.Sprintf("; %d older missed slot(s) not run", c.Missed)
		}
		if n.Held != "" && (c.Kind == plan.KindSlot || c.Kind == plan.KindRetry) {
			note += "; held now: " + n.Held
		}
		n.Due = append(n.Due, Due{Slot: c.Slot, Key: c.Key, Kind: string(c.Kind), Attempt: c.Attempt, Note: note})
	}
	for _, o := range u.Waiting {
		w := Wait{Key: o.Key, Slot: o.Slot, Status: o.Status}
		switch o.Status {
		case state.OpenRetry:
			w.At, w.Note = o.RetryAt, fmt.Sprintf("attempt %d of the slot %s, after its backoff", o.Attempt, o.Slot.UTC().Format(time.RFC3339))
			if n.Disabled {
				w.Note = fmt.Sprintf("attempt %d of the slot %s, once the schedule is enabled again", o.Attempt, o.Slot.UTC().Format(time.RFC3339))
			}
		default:
			w.At, w.Note = o.Deadline, fmt.Sprintf("running (runner %s); counted as lost if it has no outcome by then", o.Runner)
		}
		n.Waiting = append(n.Waiting, w)
	}
	return n
}

// TriggerOf describes when a schedule fires, for tables.
func TriggerOf(s *model.Schedule) string {
	var parts []string
	if s.Spec != nil {
		parts = append(parts, s.Spec.String())
	}
	if s.OnEvent != "" {
		parts = append(parts, "on "+s.OnEvent)
	}
	if s.RunImmediately {
		parts = append(parts, "immediately")
	}
	return strings.Join(parts, ", ")
}
