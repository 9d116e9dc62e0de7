package cron

import (
	"slices"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func day(s string, loc *time.Location) Range {
	d, err := time.ParseInLocation(time.DateOnly, s, loc)
	if err != nil {
		panic(err)
	}
	return Range{d, d.AddDate(0, 0, 1)}
}

func TestWithinBoundsAndExclusions(t *testing.T) {
	daily, err := Parse("0 9 * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	// Slots 09:00 on Dec 20..31, less Dec 24-26 (two overlapping ranges).
	w := daily.Within(utc("2026-12-20T00:00:00Z"), utc("2026-12-31T23:59:59Z"),
		[]Range{day("2026-12-25", time.UTC), day("2026-12-24", time.UTC), {utc("2026-12-25T12:00:00Z"), utc("2026-12-27T00:00:00Z")}})
	got := w.Slots(time.Time{}, utc("2027-02-01T00:00:00Z"), 100)
	var want []time.Time
	for _, d := range []int{20, 21, 22, 23, 27, 28, 29, 30, 31} {
		want = append(want, time.Date(2026, 12, d, 9, 0, 0, 0, time.UTC))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Slots = %v, want %v", got, want)
	}
	if n := w.Count(time.Time{}, utc("2027-02-01T00:00:00Z")); n != len(want) {
		t.Errorf("Count = %d, want %d", n, len(want))
	}
	if n := w.Count(utc("2026-12-23T09:00:00Z"), utc("2026-12-27T09:00:00Z")); n != 1 {
		t.Errorf("Count across the exclusion = %d, want 1", n)
	}
	for _, c := range []struct{ at, next, prev string }{
		{"2026-12-01T00:00:00Z", "2026-12-20T09:00:00Z", ""},
		{"2026-12-23T10:00:00Z", "2026-12-27T09:00:00Z", "2026-12-23T09:00:00Z"},
		{"2026-12-26T10:00:00Z", "2026-12-27T09:00:00Z", "2026-12-23T09:00:00Z"},
		{"2027-01-05T10:00:00Z", "", "2026-12-31T09:00:00Z"},
	} {
		next, prev := w.Next(utc(c.at)), w.Prev(utc(c.at))
		if (c.next == "" && !next.IsZero()) || (c.next != "" && !next.Equal(utc(c.next))) {
			t.Errorf("Next(%s) = %v, want %q", c.at, next, c.next)
		}
		if (c.prev == "" && !prev.IsZero()) || (c.prev != "" && !prev.Equal(utc(c.prev))) {
			t.Errorf("Prev(%s) = %v, want %q", c.at, prev, c.prev)
		}
	}
	if !daily.Next(utc("2026-12-24T00:00:00Z")).Equal(utc("2026-12-24T09:00:00Z")) {
		t.Error("Within changed the spec it was called on")
	}
}

// An exclusion is read in the schedule's zone: a Berlin holiday starts at
// midnight Berlin time, 23:00 UTC the day before.
func TestExclusionInZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	hourly, err := Parse("30 * * * *", berlin)
	if err != nil {
		t.Fatal(err)
	}
	w := hourly.Within(time.Time{}, time.Time{}, []Range{day("2026-12-25", berlin)})
	if got := w.Next(utc("2026-12-24T22:00:00Z")); !got.Equal(utc("2026-12-24T22:30:00Z")) {
		t.Errorf("last slot before the holiday = %v", got)
	}
	if got := w.Next(utc("2026-12-24T22:30:00Z")); !got.Equal(utc("2026-12-25T23:30:00Z")) {
		t.Errorf("first slot after the holiday = %v", got)
	}
	if n := w.Count(utc("2026-12-24T00:00:00Z"), utc("2026-12-27T00:00:00Z")); n != 72-24 {
		t.Errorf("Count = %d, want 48", n)
	}
}

func TestAt(t *testing.T) {
	at := utc("2026-12-24T18:00:00Z")
	s := At(at)
	if got := s.Next(at.Add(-time.Hour)); !got.Equal(at) {
		t.Errorf("Next before = %v", got)
	}
	if got := s.Next(at); !got.IsZero() {
		t.Errorf("Next at = %v, want none", got)
	}
	if got := s.Prev(at.Add(time.Hour)); !got.Equal(at) {
		t.Errorf("Prev after = %v", got)
	}
	if got := s.Prev(at.Add(-time.Second)); !got.IsZero() {
		t.Errorf("Prev before = %v, want none", got)
	}
	if n := s.Count(time.Time{}, at.AddDate(1, 0, 0)); n != 1 {
		t.Errorf("Count = %d", n)
	}
	if got := s.Slots(time.Time{}, at.AddDate(1, 0, 0), 10); !slices.Equal(got, []time.Time{at}) {
		t.Errorf("Slots = %v", got)
	}
	if got := s.Within(time.Time{}, time.Time{}, []Range{day("2026-12-24", time.UTC)}).Next(time.Time{}); !got.IsZero() {
		t.Errorf("an excluded one-off slot = %v, want none", got)
	}
	if s.String() != "at 2026-12-24T18:00:00Z" || s.Never() != "" {
		t.Errorf("String %q Never %q", s.String(), s.Never())
	}
}
