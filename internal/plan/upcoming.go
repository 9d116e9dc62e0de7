package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Upcoming is what run-due will do about one schedule, from the same
// state and rules as Due: `astra schedules next` shows it, so what it
// says is what a run does.
type Upcoming struct {
	// Due is what a run at now considers for the schedule (Due's
	// candidates of it), oldest slot first.
	Due []Candidate
	// Next are the next slots after now that will be new to a run: after
	// now and after the last decided slot.
	Next []time.Time
	// Waiting are the schedule's retries still backing off and its live
	// claims, in key order.
	Waiting []Waiting
	// Ahead is the last decided slot when it lies after now (a run whose
	// clock was ahead decided it): no slot up to it is due again.
	Ahead time.Time
}

// Waiting is an open slot no run takes up yet.
type Waiting struct {
	Key string
	*state.Open
}

// UpcomingOf works out Upcoming for s at now, with up to count next slots.
func UpcomingOf(s *model.Schedule, st *state.State, now time.Time, count int) Upcoming {
	var u Upcoming
	keys := openBySchedule(st)[s.ID]
	u.Due = candidates(s, st, keys, now)
	for _, k := range keys {
		if o := st.Open[k]; !slices.ContainsFunc(u.Due, func(c Candidate) bool { return c.Key == k }) {
			u.Waiting = append(u.Waiting, Waiting{Key: k, Open: o})
		}
	}
	if s.Spec == nil || !s.Enabled {
		return u
	}
	from := now
	if b := base(s, st); b.After(now) {
		from, u.Ahead = b, b
	}
	for t := from; len(u.Next) < count; {
		if t = s.Spec.Next(t); t.IsZero() {
			break
		}
		u.Next = append(u.Next, t)
	}
	return u
}

// clockTolerance is how far behind the ledger's newest event a clock may
// be before astra says so: runners' clocks differ by a little.
const clockTolerance = time.Minute

// ClockWarnings says what is odd about now as the time of a run, given
// newest, the time of the ledger's newest event: a clock behind the
// ledger (and the schedules that then wait for slots already decided), or
// a clock more than the longest catch-up window after it. Nil when
// nothing is.
func ClockWarnings(cfg *model.Config, st *state.State, newest, now time.Time) []string {
	if newest.IsZero() {
		return nil
	}
	var out []string
	switch {
	case newest.Sub(now) > clockTolerance:
		msg := fmt.Sprintf("the clock (%s) is %s behind the ledger's newest event (%s): a clock is wrong, this one or that of the run that recorded it",
			now.UTC().Format(time.RFC3339), span(newest.Sub(now)), newest.UTC().Format(time.RFC3339))
		var waits []string
		for _, s := range cfg.Schedules {
			if b := base(s, st); s.Enabled && s.Spec != nil && b.After(now) {
				waits = append(waits, fmt.Sprintf("%s until %s", s.Name, b.UTC().Format(time.RFC3339)))
			}
		}
		if len(waits) > 0 {
			msg += fmt.Sprintf("; %d schedule(s) have slots decided after now and run nothing before them: %s (see `astra schedules next`)",
				len(waits), strings.Join(waits, ", "))
		}
		out = append(out, msg)
	case now.Sub(newest) > model.MaxCatchupWindow:
		out = append(out, fmt.Sprintf("the clock (%s) is %s after the ledger's newest event (%s), longer than any catch-up window: "+
			"if astra really did not run for that long, ignore this; if the clock (or --now) is wrong, what this run decides is recorded at that time "+
			"and schedules wait for it", now.UTC().Format(time.RFC3339), span(now.Sub(newest)), newest.UTC().Format(time.RFC3339)))
	}
	return out
}

// span prints a duration in the largest sensible unit.
func span(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}
