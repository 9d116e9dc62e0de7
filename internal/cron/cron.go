// Package cron computes the fire times (slots) of a schedule: 5-field cron
// expressions and @descriptors read in an IANA time zone, and fixed
// intervals. Parsing is robfig/cron/v3's; the walk over days is ours so that
// daylight-saving transitions behave as documented below.
//
// DST: a slot is a wall-clock time in the schedule's zone, and each
// wall-clock time fires at most once.
//   - Repeated hour (clocks go back): a time that occurs twice fires at its
//     first occurrence only. No double run.
//   - Skipped hour (clocks go forward): a time that does not exist fires at
//     the instant it would have had without the jump, i.e. shifted by the
//     gap (02:30 on the spring-forward night in Europe/Berlin fires at 03:30
//     CEST). When that instant is also a regular slot, it fires once. No
//     silent loss.
//
// Interval slots (`interval:` and `@every`) are multiples of the interval
// since the Unix epoch, so every runner computes the same slots.
package cron

import (
	"fmt"
	"slices"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// Spec is a parsed trigger.
type Spec struct {
	expr  string
	loc   *time.Location
	every time.Duration // > 0 for interval specs
	sched *robfig.SpecSchedule
}

// Error is a parse error, with the byte offset of the bad field in the
// expression so callers can point at a column.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

const starBit = 1 << 63 // robfig's marker for a field written as * or ?

// searchDays bounds the walk for specs that fire rarely or never
// (e.g. "0 0 30 2 *"); robfig uses the same five-year horizon.
const searchDays = 5*366 + 1

var (
	fieldNames  = []string{"minute", "hour", "day-of-month", "month", "day-of-week"}
	fieldParser = []robfig.Parser{
		robfig.NewParser(robfig.Minute),
		robfig.NewParser(robfig.Hour),
		robfig.NewParser(robfig.Dom),
		robfig.NewParser(robfig.Month),
		robfig.NewParser(robfig.Dow),
	}
	standard = robfig.NewParser(robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)
)

// Parse reads a 5-field cron expression (minute hour day-of-month month
// day-of-week, with Vixie cron's day-of-month OR day-of-week rule when both
// are restricted), a descriptor (@yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly) or "@every <duration>", in loc.
func Parse(expr string, loc *time.Location) (*Spec, error) {
	if loc == nil {
		loc = time.UTC
	}
	e := strings.TrimSpace(expr)
	lead := strings.Index(expr, e)
	switch {
	case e == "":
		return nil, &Error{Msg: "empty cron expression"}
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, &Error{Offset: lead, Msg: "time zone prefixes are not accepted in cron: use the timezone key"}
	case strings.HasPrefix(e, "@every"):
		d, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(e, "@every")))
		if err != nil {
			return nil, &Error{Offset: lead, Msg: fmt.Sprintf("%q: want @every <duration>, e.g. @every 15m", e)}
		}
		s, err := Every(d)
		if err != nil {
			return nil, &Error{Offset: lead, Msg: err.Error()}
		}
		s.expr = e
		return s, nil
	case strings.HasPrefix(e, "@"):
		sched, err := standard.Parse(e)
		if err != nil {
			return nil, &Error{Offset: lead, Msg: fmt.Sprintf("unknown descriptor %q: use @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>", e)}
		}
		return &Spec{expr: e, loc: loc, sched: sched.(*robfig.SpecSchedule)}, nil
	}
	fields, offsets := splitFields(expr)
	if len(fields) != 5 {
		return nil, &Error{Offset: lead, Msg: fmt.Sprintf("cron expression %q has %d fields, want 5: minute hour day-of-month month day-of-week", e, len(fields))}
	}
	// Check field by field so the error names the field and its column.
	for i, f := range fields {
		if _, err := fieldParser[i].Parse(f); err != nil {
			return nil, &Error{Offset: offsets[i], Msg: fmt.Sprintf("%s field %q: %v", fieldNames[i], f, err)}
		}
	}
	sched, err := standard.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, &Error{Offset: lead, Msg: err.Error()}
	}
	return &Spec{expr: e, loc: loc, sched: sched.(*robfig.SpecSchedule)}, nil
}

func splitFields(s string) (fields []string, offsets []int) {
	start := -1
	for i, r := range s + " " {
		space := r == ' ' || r == '\t'
		if !space && start < 0 {
			start = i
		} else if space && start >= 0 {
			fields, offsets = append(fields, s[start:i]), append(offsets, start)
			start = -1
		}
	}
	return fields, offsets
}

// Every is a fixed-interval trigger; the interval must be whole seconds.
func Every(d time.Duration) (*Spec, error) {
	if d < time.Second || d%time.Second != 0 {
		return nil, fmt.Errorf("interval %v must be a whole number of seconds, at least 1s", d)
	}
	return &Spec{expr: "@every " + shortDuration(d), loc: time.UTC, every: d}, nil
}

// shortDuration prints 30m rather than time.Duration's 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Frequency maps the ZORA seed's frequency shorthand to a descriptor.
func Frequency(f string) (string, error) {
	switch f {
	case "hourly", "daily", "weekly", "monthly":
		return "@" + f, nil
	}
	return "", fmt.Errorf("unknown frequency %q", f)
}

func (s *Spec) String() string { return s.expr }

// Location is the zone the cron fields are read in.
func (s *Spec) Location() *time.Location { return s.loc }

// Next is the first slot strictly after t, or the zero time if none within
// five years.
func (s *Spec) Next(t time.Time) time.Time {
	if s.every > 0 {
		return intervalFloor(t, s.every).Add(s.every)
	}
	local := t.In(s.loc)
	day := civil(local)
	for range searchDays {
		for _, slot := range s.daySlots(day) {
			if slot.After(t) {
				return slot
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

// Prev is the latest slot at or before t, or the zero time if none within
// five years.
func (s *Spec) Prev(t time.Time) time.Time {
	if s.every > 0 {
		return intervalFloor(t, s.every)
	}
	// A slot shifted out of a DST gap lands on the next day at most by the
	// gap, so start one day ahead to catch it.
	day := civil(t.In(s.loc)).AddDate(0, 0, 1)
	for range searchDays {
		slots := s.daySlots(day)
		for i := len(slots) - 1; i >= 0; i-- {
			if !slots[i].After(t) {
				return slots[i]
			}
		}
		day = day.AddDate(0, 0, -1)
	}
	return time.Time{}
}

// Slots lists up to max slots in (after, until], oldest first.
func (s *Spec) Slots(after, until time.Time, max int) []time.Time {
	var out []time.Time
	if s.every > 0 {
		for t := s.Next(after); !t.After(until) && len(out) < max; t = t.Add(s.every) {
			out = append(out, t)
		}
		return out
	}
	// Walk the days once; a slot shifted out of a DST gap may belong to the
	// day before, so start a day early.
	end := civil(until.In(s.loc)).AddDate(0, 0, 1)
	for day := civil(after.In(s.loc)).AddDate(0, 0, -1); !day.After(end) && len(out) < max; day = day.AddDate(0, 0, 1) {
		for _, t := range s.daySlots(day) {
			if t.After(after) && !t.After(until) && len(out) < max {
				out = append(out, t)
			}
		}
	}
	return out
}

// Count counts slots in (after, until], stopping at max.
func (s *Spec) Count(after, until time.Time, max int) int {
	if s.every > 0 && until.After(after) {
		return min(max, int(intervalFloor(until, s.every).Sub(intervalFloor(after, s.every))/s.every))
	}
	return len(s.Slots(after, until, max))
}

func intervalFloor(t time.Time, d time.Duration) time.Time {
	u := t.UnixNano()
	r := u % int64(d)
	if r < 0 {
		r += int64(d)
	}
	return time.Unix(0, u-r).UTC()
}

// civil is local midnight of t's date as a time in UTC used only as a
// calendar value (no zone arithmetic).
func civil(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// daySlots lists the slots whose wall-clock date is day, in ascending
// instant order, per the package's DST rules.
func (s *Spec) daySlots(day time.Time) []time.Time {
	sc := s.sched
	if sc.Month&(1<<uint(day.Month())) == 0 || !dayMatches(sc, day) {
		return nil
	}
	var out []time.Time
	for h := 0; h < 24; h++ {
		if sc.Hour&(1<<uint(h)) == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if sc.Minute&(1<<uint(m)) == 0 {
				continue
			}
			out = append(out, s.wallTime(day, h, m))
		}
	}
	// A time shifted out of a DST gap may land on a regular slot.
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// wallTime resolves day h:m in the schedule's zone to one instant: the
// earliest instant showing that wall time, or for a time skipped by a DST
// jump, the wall time read with the offset in force before the jump.
// (time.Date leaves both cases unspecified and differs between zones.)
func (s *Spec) wallTime(day time.Time, h, m int) time.Time {
	w := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC)
	// Zone offsets lie within ±14h, so these instants are a day either side.
	_, before := w.Add(-26 * time.Hour).In(s.loc).Zone()
	_, after := w.Add(26 * time.Hour).In(s.loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		c := w.Add(-time.Duration(off) * time.Second)
		l := c.In(s.loc)
		if l.Hour() == h && l.Minute() == m && l.Day() == day.Day() && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	if best.IsZero() {
		best = w.Add(-time.Duration(before) * time.Second)
	}
	return best
}

// dayMatches applies Vixie cron's rule: when both day-of-month and
// day-of-week are restricted, either may match.
func dayMatches(s *robfig.SpecSchedule, day time.Time) bool {
	dom := s.Dom&(1<<uint(day.Day())) != 0
	dow := s.Dow&(1<<uint(day.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
