package cron

import (
	"slices"
	"time"
)

// Range is a half-open span of time [From, To) in which a spec has no
// slot: an exclusion calendar's day or event.
type Range struct {
	From, To time.Time
}

// At is a one-off trigger: its only slot is t.
func At(t time.Time) *Spec {
	return &Spec{expr: "at " + t.Format(time.RFC3339), loc: t.Location(), once: t}
}

// Within returns s limited to slots in [start, end] (a zero bound is
// open) and outside every range of skip. s itself is unchanged.
func (s *Spec) Within(start, end time.Time, skip []Range) *Spec {
	w := *s
	w.start, w.end = start, end
	w.skip = merge(skip)
	return &w
}

// merge sorts ranges and joins those that overlap or touch, dropping empty
// ones, so that a walk can jump over each once.
func merge(rs []Range) []Range {
	var out []Range
	for _, r := range rs {
		if r.To.After(r.From) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Range) int { return a.From.Compare(b.From) })
	n := 0
	for _, r := range out {
		if n > 0 && !r.From.After(out[n-1].To) {
			if r.To.After(out[n-1].To) {
				out[n-1].To = r.To
			}
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

// skipped is the excluded range holding t, if any.
func (s *Spec) skipped(t time.Time) (Range, bool) {
	i, _ := slices.BinarySearchFunc(s.skip, t, func(r Range, t time.Time) int {
		if !r.To.After(t) {
			return -1
		}
		if r.From.After(t) {
			return 1
		}
		return 0
	})
	if i < len(s.skip) && !s.skip[i].From.After(t) && s.skip[i].To.After(t) {
		return s.skip[i], true
	}
	return Range{}, false
}

// rawNext and rawPrev are the trigger's own slots, before the window.
func (s *Spec) rawNext(t time.Time) time.Time {
	if !s.once.IsZero() {
		if s.once.After(t) {
			return s.once
		}
		return time.Time{}
	}
	return s.next(t)
}

func (s *Spec) rawPrev(t time.Time) time.Time {
	if !s.once.IsZero() {
		if !s.once.After(t) {
			return s.once
		}
		return time.Time{}
	}
	return s.prev(t)
}

// Next is the first slot strictly after t, or the zero time if there is
// none (within a 400-year cycle, or before the window's end).
func (s *Spec) Next(t time.Time) time.Time {
	if !s.start.IsZero() && t.Before(s.start) {
		t = s.start.Add(-time.Nanosecond)
	}
	for {
		n := s.rawNext(t)
		if n.IsZero() || (!s.end.IsZero() && n.After(s.end)) {
			return time.Time{}
		}
		r, ok := s.skipped(n)
		if !ok {
			return n
		}
		t = r.To.Add(-time.Nanosecond) // each range is jumped once
	}
}

// Prev is the latest slot at or before t, or the zero time if there is
// none (within a 400-year cycle, or after the window's start).
func (s *Spec) Prev(t time.Time) time.Time {
	if !s.end.IsZero() && t.After(s.end) {
		t = s.end
	}
	for {
		p := s.rawPrev(t)
		if p.IsZero() || (!s.start.IsZero() && p.Before(s.start)) {
			return time.Time{}
		}
		r, ok := s.skipped(p)
		if !ok {
			return p
		}
		t = r.From.Add(-time.Nanosecond)
	}
}

// windowed reports whether anything beyond the trigger limits the slots.
func (s *Spec) windowed() bool {
	return !s.start.IsZero() || !s.end.IsZero() || len(s.skip) > 0 || !s.once.IsZero()
}

// Slots lists up to max slots in (after, until], oldest first.
func (s *Spec) Slots(after, until time.Time, max int) []time.Time {
	if !s.windowed() {
		return s.slots(after, until, max)
	}
	var out []time.Time
	for t := s.Next(after); !t.IsZero() && !t.After(until) && len(out) < max; t = s.Next(t) {
		out = append(out, t)
	}
	return out
}

// Count is the exact number of slots in (after, until], len(Slots) without
// listing them: the trigger's count within the window less its count in
// each excluded range (see count for its cost).
func (s *Spec) Count(after, until time.Time) int {
	if !s.start.IsZero() && after.Before(s.start) {
		after = s.start.Add(-time.Nanosecond)
	}
	if !s.end.IsZero() && until.After(s.end) {
		until = s.end
	}
	if !until.After(after) {
		return 0
	}
	n := s.rawCount(after, until)
	for _, r := range s.skip {
		// [From, To) holds the slots in (From-1ns, To-1ns].
		a, u := maxTime(after, r.From.Add(-time.Nanosecond)), minTime(until, r.To.Add(-time.Nanosecond))
		if u.After(a) {
			n -= s.rawCount(a, u)
		}
	}
	return n
}

func (s *Spec) rawCount(after, until time.Time) int {
	if !s.once.IsZero() {
		if s.once.After(after) && !s.once.After(until) {
			return 1
		}
		return 0
	}
	return s.count(after, until)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
