package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/calendar"
	"github.com/astra-gitops/astra/internal/cron"
	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
)

// addCalendars merges one file's exclusion calendars, refusing a name
// already defined elsewhere. Merged positions go to Policies.Meta.Keys.
func (m *merger) addCalendars(cals map[string]model.Calendar, at func(section, name string) diag.Pos) {
	for _, name := range sortedKeys(cals) {
		pos, k := at("calendars", name), "calendars."+name
		if prev, ok := m.p.Meta.Keys[k]; ok {
			m.diags.Errorf(pos, "define each calendar once", "calendar %q is already defined at %s", name, prev)
			continue
		}
		if m.p.Calendars == nil {
			m.p.Calendars = map[string]model.Calendar{}
		}
		m.p.Meta.Keys[k] = pos
		m.p.Calendars[name] = cals[name]
	}
}

// resolveWindows reads the exclusion calendars (dates, and .ics files in
// the repository) and limits each schedule's slots to its start_at, end_at
// and exclude, read in the schedule's zone. A calendar that does not read
// is reported and excludes what did read.
func resolveWindows(root string, cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	cals := map[string][]calendar.Span{}
	for _, name := range sortedKeys(p.Calendars) {
		cals[name] = readCalendar(root, name, p.Calendars[name], p.Meta.At("calendars."+name), diags)
	}
	for _, s := range cfg.Schedules {
		resolveWindow(s, cals, diags)
	}
}

func readCalendar(root, name string, entries model.Calendar, pos diag.Pos, diags *diag.List) []calendar.Span {
	var out []calendar.Span
	for _, e := range entries {
		if !strings.HasSuffix(strings.ToLower(e), ".ics") {
			sp, err := calendar.Date(e)
			if err != nil {
				diags.Errorf(pos, "write dates as YYYY-MM-DD and iCalendar files as paths ending in .ics", "calendar %q: %v", name, err)
				continue
			}
			out = append(out, sp)
			continue
		}
		data, err := repofs.ReadFile(root, e, model.MaxFileBytes)
		if err != nil {
			diags.Errorf(pos, "name an .ics file in the repository, relative to its root", "calendar %q: %v", name, err)
			continue
		}
		spans, err := calendar.ParseICS(data)
		if err != nil {
			diags.Errorf(pos, "", "calendar %q: %s: %v", name, e, err)
			continue
		}
		out = append(out, spans...)
	}
	return out
}

// resolveWindow applies start_at, end_at and exclude to s's slots.
func resolveWindow(s *model.Schedule, cals map[string][]calendar.Span, diags *diag.List) {
	m := s.Meta
	if !m.Has("start_at") && !m.Has("end_at") && !m.Has("exclude") {
		return
	}
	start, okStart := windowBound(s, "start_at", s.StartAt, false, diags)
	end, okEnd := windowBound(s, "end_at", s.EndAt, true, diags)
	if okStart && okEnd && !start.IsZero() && !end.IsZero() && end.Before(start) {
		diags.Errorf(m.At("end_at"), "swap them, or move end_at later", "end_at %s is before start_at %s", s.EndAt, s.StartAt)
	}
	var skip []cron.Range
	for _, name := range s.Exclude {
		spans, ok := cals[name]
		if !ok {
			diags.Errorf(m.At("exclude"), "define it under calendars: in policies", "exclude: no calendar %q", name)
			continue
		}
		for _, sp := range spans {
			from, to := sp.In(s.Loc)
			skip = append(skip, cron.Range{From: from, To: to})
		}
	}
	if s.Spec == nil {
		if s.OnEvent != "" || s.RunImmediately {
			diags.Warnf(m.Pos, "they bound cron, frequency, interval and at slots; an event or run_immediately runs whenever it comes",
				"schedule %q has start_at, end_at or exclude but no time trigger: they change nothing", s.Name)
		}
		return
	}
	s.Spec = s.Spec.Within(start, end, skip)
	if s.Spec.Next(time.Time{}).IsZero() {
		diags.Warnf(m.Pos, "check start_at, end_at and exclude", "schedule %q has no slot in its window: it will never be due", s.Name)
	}
}

// windowBound reads a start_at or end_at; zero when it is not set. A date
// is midnight in the schedule's zone, and for an end the last instant of
// that day, so that the day's slots are in the window.
func windowBound(s *model.Schedule, key, v string, end bool, diags *diag.List) (time.Time, bool) {
	if !s.Meta.Has(key) {
		return time.Time{}, true
	}
	t, date, err := parseWhen(v, s.Loc)
	if err != nil {
		diags.Errorf(s.Meta.At(key), "write an RFC 3339 time such as 2026-12-24T18:00:00Z, or a date such as 2026-12-24", "%s: %v", key, err)
		return time.Time{}, false
	}
	if end && date {
		t = t.AddDate(0, 0, 1).Add(-time.Nanosecond)
	}
	return t, true
}

// parseWhen reads an RFC 3339 time, or a date as midnight in loc.
func parseWhen(v string, loc *time.Location) (t time.Time, date bool, err error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, false, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, loc); err == nil {
		return t, true, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is not an RFC 3339 time or a date", v)
}
