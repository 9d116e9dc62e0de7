// Package cron computes the fire times (slots) of a schedule: 5-field cron
// expressions and @descriptors read in an IANA time zone, and fixed
// intervals. Expressions mean what they mean to cronie (Vixie cron's
// successor): its grammar, its day rule and its handling of clock changes,
// checked against cronie's own source and daemon.
//
// Days: when day-of-month and day-of-week both restrict, either may match;
// but a field that begins with '*' (such as */2) counts as unrestricted, and
// then both must match: "0 0 */2 * 1" fires on odd days that are Mondays.
// Day-of-week 7 is Sunday, like 0.
//
// Clock changes: a slot is a wall-clock time in the schedule's zone.
// cronie tells two kinds of job apart, and so does astra:
//   - fixed-time (neither the minute nor the hour field begins with '*',
//     e.g. "30 2 * * *", @daily): a time skipped when clocks go forward
//     fires at the first instant after the gap (02:30 on the spring-forward
//     night in Europe/Berlin fires at 03:00 CEST); a time that occurs twice
//     when clocks go back fires at its first occurrence only.
//   - wildcard ("*/30 * * * *", "30 * * * *", @hourly): follows the clock.
//     Skipped times do not fire; repeated times fire at both occurrences.
//
// A slot is an instant and fires once, so several skipped times of one
// schedule (and a regular slot at the gap's end) fire together, once;
// cronie runs each of them.
//
// Interval slots (`interval:` and `@every`) are multiples of the interval
// since the Unix epoch, so every runner computes the same slots.
package cron

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// Spec is a parsed trigger.
type Spec struct {
	expr  string
	loc   *time.Location
	every time.Duration // > 0 for interval specs
	f     fields
	never bool // no calendar date matches (see Never)

	once       time.Time // the one slot of an At spec
	start, end time.Time // window.go: no slot before start or after end (zero: open)
	skip       []Range   // window.go: excluded ranges, sorted and disjoint
}

// Error is a parse error, with the byte offset of the bad part in the
// expression so callers can point at a column.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// searchDays bounds the walk over days: the Gregorian calendar repeats
// every 400 years (146097 days, a whole number of weeks), so a day pattern
// that matches at all matches within that. Specs that never match are
// answered without walking.
const searchDays = 146097 + 2

// Parse reads a 5-field cron expression (minute hour day-of-month month
// day-of-week), an @descriptor (@yearly, @annually, @monthly, @weekly,
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
	case e == "@reboot":
		return nil, &Error{Offset: lead, Msg: "@reboot has no meaning for astra: use run_immediately: true to run once when first seen"}
	case strings.HasPrefix(e, "@"):
		d, ok := descriptors[e]
		if !ok {
			return nil, &Error{Offset: lead, Msg: fmt.Sprintf("unknown descriptor %q: use @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>", e)}
		}
		f, _, _ := parseFields(strings.Fields(d))
		return newSpec(e, loc, f), nil
	}
	fs, offsets := splitFields(expr)
	if len(fs) != 5 {
		return nil, &Error{Offset: lead, Msg: fmt.Sprintf("cron expression %q has %d fields, want 5: minute hour day-of-month month day-of-week", e, len(fs))}
	}
	f, i, ferr := parseFields(fs)
	if ferr != nil {
		return nil, &Error{Offset: offsets[i] + ferr.at, Msg: fmt.Sprintf("%s field %q: %s", fieldBounds[i].name, fs[i], ferr.msg)}
	}
	return newSpec(e, loc, f), nil
}

func newSpec(expr string, loc *time.Location, f fields) *Spec {
	s := &Spec{expr: expr, loc: loc, f: f}
	s.never = s.Never() != ""
	return s
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

// Never says why no date can ever match the spec (as in "0 0 30 2 *"), or
// returns "" when one can. Every month has every weekday and every date
// falls on every weekday within 400 years, so only "both must match" specs
// whose days do not exist in their months never fire.
func (s *Spec) Never() string {
	f := s.f
	if s.every > 0 || !s.once.IsZero() || !(f.domStar || f.dowStar) {
		return ""
	}
	var months []string
	for m := time.January; m <= time.December; m++ {
		if f.month&(1<<m) == 0 {
			continue
		}
		if f.dom&(1<<(monthDays(m)+1)-1) != 0 {
			return ""
		}
		months = append(months, m.String())
	}
	var days []string
	for d := 29; d <= 31; d++ {
		if f.dom&(1<<d) != 0 {
			days = append(days, fmt.Sprint(d))
		}
	}
	verb := "has"
	if len(months) > 1 {
		verb = "have"
	}
	return fmt.Sprintf("%s %s no day %s", orList(months, "and"), verb, orList(days, "or"))
}

// monthDays is the most days month m can have (29 for February).
func monthDays(m time.Month) int {
	return time.Date(2000, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func orList(xs []string, conj string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " " + conj + " " + xs[len(xs)-1]
}

// next is the first slot of the expression strictly after t, or the zero time if there is
// none within a 400-year cycle.
func (s *Spec) next(t time.Time) time.Time {
	if s.every > 0 {
		return intervalFloor(t, s.every).Add(s.every)
	}
	if s.never {
		return time.Time{}
	}
	// A day's slots may lie a little outside the day (a gap's end, a
	// repeated hour around midnight), so look one day beyond the first
	// day that has one.
	day := civil(t.In(s.loc)).AddDate(0, 0, -1)
	var best time.Time
	for range searchDays {
		found := !best.IsZero()
		for _, slot := range s.daySlots(day) {
			if slot.After(t) {
				if best.IsZero() || slot.Before(best) {
					best = slot
				}
				break
			}
		}
		if found {
			return best
		}
		day = day.AddDate(0, 0, 1)
	}
	return best
}

// prev is the latest slot of the expression at or before t, or the zero time if there is
// none within a 400-year cycle.
func (s *Spec) prev(t time.Time) time.Time {
	if s.every > 0 {
		return intervalFloor(t, s.every)
	}
	if s.never {
		return time.Time{}
	}
	day := civil(t.In(s.loc)).AddDate(0, 0, 1)
	var best time.Time
	for n := 0; n < searchDays; n++ {
		if best.IsZero() && s.f.month&(1<<day.Month()) == 0 {
			// No slot this month: on to the last day of the month before
			// (a yearly schedule would otherwise walk back day by day).
			n += day.Day() - 1
			day = time.Date(day.Year(), day.Month(), 0, 0, 0, 0, 0, time.UTC)
			continue
		}
		found := !best.IsZero()
		slots := s.daySlots(day)
		for j := len(slots) - 1; j >= 0; j-- {
			if !slots[j].After(t) {
				if slots[j].After(best) {
					best = slots[j]
				}
				break
			}
		}
		if found {
			return best
		}
		day = day.AddDate(0, 0, -1)
	}
	return best
}

// slots lists up to max slots of the expression in (after, until], oldest first.
func (s *Spec) slots(after, until time.Time, max int) []time.Time {
	var out []time.Time
	if s.every > 0 {
		for t := s.next(after); !t.After(until) && len(out) < max; t = t.Add(s.every) {
			out = append(out, t)
		}
		return out
	}
	if s.never {
		return nil
	}
	// Walk the days once, a day beyond each end for slots that lie outside
	// their day. Slots of neighbouring days may coincide (a gap's end).
	end := civil(until.In(s.loc)).AddDate(0, 0, 1)
	for day := civil(after.In(s.loc)).AddDate(0, 0, -1); !day.After(end) && len(out) < max; day = day.AddDate(0, 0, 1) {
		for _, t := range s.daySlots(day) {
			if t.After(after) && !t.After(until) && len(out) < max && (len(out) == 0 || t.After(out[len(out)-1])) {
				out = append(out, t)
			}
		}
	}
	return out
}

// count is the exact number of slots of the expression in (after, until], len(Slots) without
// listing them: arithmetic for intervals; for cron, a walk over the days in
// which a day that no clock change touches adds its fixed number of slots,
// and only the day or two around each change are resolved slot by slot, as
// Slots resolves them. Its cost grows with the days in the range, never
// with the slots.
func (s *Spec) count(after, until time.Time) int {
	if !until.After(after) || s.never {
		return 0
	}
	if s.every > 0 {
		return int(intervalFloor(until, s.every).Sub(intervalFloor(after, s.every)) / s.every)
	}
	perDay := bits.OnesCount64(s.f.hour) * bits.OnesCount64(s.f.minute)
	var z zonePeriod
	var last time.Time // the newest slot counted one by one
	n := 0
	end := civil(until.In(s.loc)).AddDate(0, 0, 1)
	for day := civil(after.In(s.loc)).AddDate(0, 0, -1); !day.After(end); day = day.AddDate(0, 0, 1) {
		if s.f.month&(1<<day.Month()) == 0 || !s.f.dayMatches(day) {
			continue
		}
		z.around(s, day)
		if lo, hi := day.Add(-z.off), day.Add(24*time.Hour-z.off); z.whole(day) && lo.After(last) && lo.After(after) && !hi.After(until) {
			// Unless a slot of the day before was moved onto its first
			// instant (a gap's end), a whole day counts whole in range.
			n += perDay
			continue
		}
		for _, t := range s.daySlots(day) {
			if t.After(after) && !t.After(until) && t.After(last) {
				n++
				last = t
			}
		}
	}
	return n
}

// zonePeriod is the zone period holding noon of the last day a walk
// looked up, with the offsets on either side of it, so that the days of
// one period cost no zone lookup.
type zonePeriod struct {
	off, before, after time.Duration // in the period, before its start, from its stop
	start, stop        time.Time     // zero: unbounded
	ok                 bool
}

// whole reports whether every wall time of day (a civil date in z) occurs
// once, in z (none also occurs in the period before or after it): then the
// day fires at each of its wall times.
func (z *zonePeriod) whole(day time.Time) bool {
	return (z.start.IsZero() || !z.start.After(day.Add(-max(z.off, z.before)))) &&
		(z.stop.IsZero() || !z.stop.Before(day.Add(24*time.Hour-min(z.off, z.after))))
}

// around makes z the zone period holding noon of day (a civil date).
func (z *zonePeriod) around(s *Spec, day time.Time) {
	if z.ok {
		noon := day.Add(12*time.Hour - z.off)
		if (z.start.IsZero() || !z.start.After(noon)) && (z.stop.IsZero() || z.stop.After(noon)) {
			return
		}
	}
	offset := func(t time.Time) time.Duration {
		_, sec := t.In(s.loc).Zone()
		return time.Duration(sec) * time.Second
	}
	noon := day.Add(12 * time.Hour)
	z.off = offset(noon)
	z.start, z.stop = noon.Add(-z.off).In(s.loc).ZoneBounds()
	z.before, z.after = z.off, z.off
	if !z.start.IsZero() {
		z.before = offset(z.start.Add(-time.Second))
	}
	if !z.stop.IsZero() {
		z.after = offset(z.stop)
	}
	z.ok = true
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

// dayMatches applies cronie's day rule.
func (f *fields) dayMatches(day time.Time) bool {
	dom := f.dom&(1<<day.Day()) != 0
	dow := f.dow&(1<<day.Weekday()) != 0
	if f.domStar || f.dowStar {
		return dom && dow
	}
	return dom || dow
}

// daySlots lists the slots whose wall-clock date is day (a civil date), in
// ascending instant order, per the package's rules for clock changes.
func (s *Spec) daySlots(day time.Time) []time.Time {
	f := &s.f
	if f.month&(1<<day.Month()) == 0 || !f.dayMatches(day) {
		return nil
	}
	off, steady := s.steadyOffset(day)
	out := make([]time.Time, 0, bits.OnesCount64(f.hour)*bits.OnesCount64(f.minute))
	for h := 0; h < 24; h++ {
		if f.hour&(1<<h) == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if f.minute&(1<<m) == 0 {
				continue
			}
			w := day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
			if steady {
				out = append(out, w.Add(-off))
				continue
			}
			out = s.resolve(out, w)
		}
	}
	if steady {
		return out
	}
	slices.SortFunc(out, time.Time.Compare)
	return slices.CompactFunc(out, time.Time.Equal)
}

// steadyOffset returns the zone's offset on day and whether that offset
// holds, with no transition, from well before the day to well after it,
// so that every wall time of the day occurs exactly once. (Zone offsets lie
// within ±14h, so 28h either side is enough.)
func (s *Spec) steadyOffset(day time.Time) (time.Duration, bool) {
	noon := day.Add(12 * time.Hour)
	_, sec := noon.In(s.loc).Zone()
	off := time.Duration(sec) * time.Second
	start, end := noon.Add(-off).In(s.loc).ZoneBounds()
	first, last := day.Add(-off-28*time.Hour), day.Add(-off+52*time.Hour)
	return off, (start.IsZero() || !start.After(first)) && (end.IsZero() || end.After(last))
}

// resolve appends to out the instants at which the wall time w (a civil
// time carried in UTC) fires: its occurrences, only the first for a
// fixed-time spec; for a time skipped by a clock change, none for a
// wildcard spec and the first instant after the gap for a fixed-time one.
func (s *Spec) resolve(out []time.Time, w time.Time) []time.Time {
	n := len(out)
	var before time.Duration
	for i, probe := range []time.Time{w.Add(-28 * time.Hour), w.Add(28 * time.Hour)} {
		_, sec := probe.In(s.loc).Zone()
		off := time.Duration(sec) * time.Second
		if i == 0 {
			before = off
		}
		if c := w.Add(-off); civilMinute(c.In(s.loc)).Equal(w) && !slices.ContainsFunc(out[n:], c.Equal) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out[n:], time.Time.Compare)
	switch {
	case len(out) == n && !s.f.wild:
		// w read with the offset before the jump lies inside the new
		// period; that period starts where the gap ends.
		start, _ := w.Add(-before).In(s.loc).ZoneBounds()
		return append(out, start.UTC())
	case len(out) > n && !s.f.wild:
		return out[:n+1]
	}
	return out
}

func civilMinute(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
}
