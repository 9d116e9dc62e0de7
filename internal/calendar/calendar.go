// Package calendar reads exclusion calendars: dates (2026-12-25) and
// iCalendar files (RFC 5545) with all-day events and DTSTART/DTEND ranges.
// Only what an exclusion needs is read: VEVENTs' DTSTART, DTEND and
// DURATION; a recurring event (RRULE, RDATE) is refused rather than read
// as its first occurrence.
package calendar

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Span is a half-open span [From, To). A floating span (a date, an
// all-day event, a local time without a zone) is a wall-clock span whose
// fields are read in the zone it is applied in: In gives the instants.
type Span struct {
	From, To time.Time
	Floating bool
}

// In is the span's instants in loc.
func (s Span) In(loc *time.Location) (from, to time.Time) {
	if !s.Floating {
		return s.From, s.To
	}
	wall := func(t time.Time) time.Time {
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, loc)
	}
	return wall(s.From), wall(s.To)
}

// Date reads a calendar date (2026-12-25) as the span of that day.
func Date(s string) (Span, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Span{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return Span{From: d, To: d.AddDate(0, 0, 1), Floating: true}, nil
}

// maxEvents bounds what one file may hold.
const maxEvents = 10000

// ParseICS reads the events of an iCalendar file as spans, in file order.
func ParseICS(data []byte) ([]Span, error) {
	var (
		out     []Span
		in      bool
		ev      event
		lineNo  int
		evStart int
	)
	for i, line := range unfold(data) {
		lineNo = i + 1
		name, params, value := split(line)
		switch {
		case name == "BEGIN" && strings.EqualFold(value, "VEVENT"):
			in, ev, evStart = true, event{}, lineNo
		case !in:
		case name == "END" && strings.EqualFold(value, "VEVENT"):
			in = false
			sp, err := ev.span()
			if err != nil {
				return nil, fmt.Errorf("line %d: event: %w", evStart, err)
			}
			if len(out) == maxEvents {
				return nil, fmt.Errorf("more than %d events", maxEvents)
			}
			out = append(out, sp)
		case name == "DTSTART", name == "DTEND":
			t, date, floating, err := parseTime(params, value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", lineNo, name, err)
			}
			if name == "DTSTART" {
				ev.start, ev.date, ev.floating = t, date, floating
			} else {
				ev.end, ev.hasEnd = t, true
			}
		case name == "DURATION":
			d, err := parseDuration(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: DURATION: %w", lineNo, err)
			}
			ev.dur, ev.hasDur = d, true
		case name == "RRULE", name == "RDATE":
			return nil, fmt.Errorf("line %d: recurring events (%s) are not supported: list each occurrence as its own event", lineNo, name)
		}
	}
	if in {
		return nil, fmt.Errorf("line %d: event has no END:VEVENT", evStart)
	}
	return out, nil
}

// event is what ParseICS gathers of one VEVENT.
type event struct {
	start, end     time.Time
	date           bool // DTSTART is a date: an all-day event
	floating       bool // DTSTART has no zone of its own
	hasEnd, hasDur bool
	dur            time.Duration
}

func (e event) span() (Span, error) {
	if e.start.IsZero() {
		return Span{}, fmt.Errorf("no DTSTART")
	}
	sp := Span{From: e.start, Floating: e.floating}
	switch {
	case e.hasEnd:
		sp.To = e.end
	case e.hasDur:
		sp.To = e.start.Add(e.dur)
	case e.date:
		sp.To = e.start.AddDate(0, 0, 1) // RFC 5545: an all-day event without an end lasts the day
	default:
		return Span{}, fmt.Errorf("no DTEND or DURATION: an event at one instant excludes nothing")
	}
	if !sp.To.After(sp.From) {
		return Span{}, fmt.Errorf("ends before it starts")
	}
	return sp, nil
}

// parseTime reads a DATE or DATE-TIME value with its TZID parameter.
// floating: the value has no zone (a date, or a local time without TZID),
// so it is read in the zone the calendar is applied in.
func parseTime(params map[string]string, v string) (t time.Time, date, floating bool, err error) {
	if params["VALUE"] == "DATE" || len(v) == 8 {
		t, err = time.Parse("20060102", v)
		if err != nil {
			return t, false, false, fmt.Errorf("%q is not a date (YYYYMMDD)", v)
		}
		return t, true, true, nil
	}
	if strings.HasSuffix(v, "Z") {
		t, err = time.Parse("20060102T150405Z", v)
		if err != nil {
			return t, false, false, fmt.Errorf("%q is not a UTC time (YYYYMMDDTHHMMSSZ)", v)
		}
		return t, false, false, nil
	}
	loc, floating := time.UTC, true
	if tz := params["TZID"]; tz != "" {
		if loc, err = time.LoadLocation(strings.TrimPrefix(tz, "/")); err != nil {
			return t, false, false, fmt.Errorf("unknown time zone %q", tz)
		}
		floating = false
	}
	t, err = time.ParseInLocation("20060102T150405", v, loc)
	if err != nil {
		return t, false, false, fmt.Errorf("%q is not a time (YYYYMMDDTHHMMSS)", v)
	}
	return t, false, floating, nil
}

// parseDuration reads the RFC 5545 durations an exclusion uses:
// P<n>W, P<n>D and P[<n>D]T[<n>H][<n>M][<n>S].
func parseDuration(v string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration such as P1D or PT2H", v)
	s, ok := strings.CutPrefix(strings.TrimPrefix(v, "+"), "P")
	if !ok || s == "" {
		return 0, bad
	}
	var d time.Duration
	units := map[byte]time.Duration{'W': 7 * 24 * time.Hour, 'D': 24 * time.Hour}
	n := 0
	digits := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			n, digits = n*10+int(c-'0'), true
			if n > 1e6 {
				return 0, bad
			}
		case c == 'T':
			units = map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}
		default:
			u, ok := units[c]
			if !ok || !digits {
				return 0, bad
			}
			d += time.Duration(n) * u
			n, digits = 0, false
		}
	}
	if digits || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// unfold splits data into content lines, joining folded ones (a line that
// starts with a space or tab continues the one before).
func unfold(data []byte) []string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if len(lines) > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			lines[len(lines)-1] += l[1:]
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// split reads "NAME;P1=V1;P2=V2:value".
func split(line string) (name string, params map[string]string, value string) {
	head, value, _ := strings.Cut(line, ":")
	parts := strings.Split(head, ";")
	params = map[string]string{}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		params[strings.ToUpper(k)] = strings.Trim(v, `"`)
	}
	return strings.ToUpper(parts[0]), params, strings.TrimSpace(value)
}
