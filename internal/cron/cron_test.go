package cron

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func ts(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNextTable holds known answers, written out by hand. Clock changes
// and cronie's day rules are in TestCronie.
func TestNextTable(t *testing.T) {
	cases := []struct {
		name, expr, zone, after string
		want                    []string // successive Next results, UTC
	}{
		{"daily utc", "0 9 * * *", "UTC", "2026-11-22T08:00:00Z",
			[]string{"2026-11-22T09:00:00Z", "2026-11-23T09:00:00Z"}},
		{"strictly after", "0 9 * * *", "UTC", "2026-11-22T09:00:00Z",
			[]string{"2026-11-23T09:00:00Z"}},
		{"every 4 hours", "0 */4 * * *", "UTC", "2026-11-22T09:00:00Z",
			[]string{"2026-11-22T12:00:00Z", "2026-11-22T16:00:00Z", "2026-11-22T20:00:00Z", "2026-11-23T00:00:00Z"}},
		{"monday midnight", "0 0 * * 1", "UTC", "2026-11-22T00:00:00Z",
			[]string{"2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"}},
		{"weekdays 08:30 copenhagen", "30 8 * * 1-5", "Europe/Copenhagen", "2026-11-20T08:00:00Z",
			[]string{"2026-11-23T07:30:00Z", "2026-11-24T07:30:00Z"}},
		{"dom or dow", "0 0 1 * 5", "UTC", "2026-11-25T00:00:00Z",
			[]string{"2026-11-27T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z"}},
		{"dom only", "0 0 13 * *", "UTC", "2026-11-01T00:00:00Z",
			[]string{"2026-11-13T00:00:00Z", "2026-12-13T00:00:00Z"}},
		{"leap day", "0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		// Both must match: 29 February on a Sunday, 2032 then 2060.
		{"rare", "0 0 29 2 */7", "UTC", "2029-01-01T00:00:00Z",
			[]string{"2032-02-29T00:00:00Z", "2060-02-29T00:00:00Z"}},
		{"@daily", "@daily", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-23T00:00:00Z"}},
		{"@weekly is sunday", "@weekly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-29T00:00:00Z"}},
		{"@monthly", "@monthly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-12-01T00:00:00Z"}},
		{"@hourly", "@hourly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-22T11:00:00Z"}},
		{"@every", "@every 15m", "UTC", "2026-11-22T10:07:00Z",
			[]string{"2026-11-22T10:15:00Z", "2026-11-22T10:30:00Z"}},
		// Daily 09:00 Berlin keeps local time across the change.
		{"berlin daily across fall back", "0 9 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T08:00:00Z", "2026-10-26T08:00:00Z"}},
		// The day after a skipped 02:30, it fires at 02:30 again.
		{"berlin skipped hour, next day", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		// Lord Howe moves by 30 minutes: 02:00 -> 02:30 in October.
		{"lord howe half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z",
			[]string{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		// Santiago springs forward at midnight: 00:00-00:59 on 6 September
		// 2026 do not exist; @daily fires at 01:00 -03.
		{"santiago midnight gap", "@daily", "America/Santiago", "2026-09-05T12:00:00Z",
			[]string{"2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse(c.expr, mustLoc(t, c.zone))
			if err != nil {
				t.Fatal(err)
			}
			at := ts(t, c.after)
			for i, w := range c.want {
				at = s.Next(at)
				if !at.Equal(ts(t, w)) {
					t.Fatalf("next #%d = %s, want %s", i+1, at.UTC().Format(time.RFC3339), w)
				}
			}
		})
	}
}

// TestCronie holds what cronie itself does, case by case. Day rules come
// from cronie's parser (entry.c load_entry) and its test for "now" (cron.c
// find_jobs), linked into a small program; clock changes from cronie's
// crond run under a fake clock at 60x speed with TZ set to the zone. cronie
// lists each run; a slot in astra is an instant that fires once, so runs in
// the same minute count once here (the one difference, documented).
//
// 2026 transitions: Europe/Berlin goes forward on 29 March (02:00 -> 03:00)
// and back on 25 October (03:00 -> 02:00); America/New_York forward on
// 8 March, back on 1 November.
func TestCronie(t *testing.T) {
	day := func(dates ...string) []string {
		for i, d := range dates {
			dates[i] = d + "T00:00:00Z"
		}
		return dates
	}
	cases := []struct {
		expr, zone, after, until string
		cronie                   []string // runs in (after, until], UTC
	}{
		// Day-of-month starts with '*': both fields must match, so odd days
		// that are Mondays (Vixie's and cronie's DOM_STAR).
		{"0 0 */2 * 1", "UTC", "2025-12-31T12:00:00Z", "2026-02-28T00:00:00Z",
			day("2026-01-05", "2026-01-19", "2026-02-09", "2026-02-23")},
		// Both restricted: either matches (1st, 15th, or a Wednesday).
		{"0 0 1,15 * 3", "UTC", "2025-12-31T12:00:00Z", "2026-01-31T00:00:00Z",
			day("2026-01-01", "2026-01-07", "2026-01-14", "2026-01-15", "2026-01-21", "2026-01-28")},
		// man 5 crontab's example: 04:30 on the 1st and 15th, plus Fridays.
		{"30 4 1,15 * 5", "UTC", "2025-12-31T12:00:00Z", "2026-01-31T00:00:00Z",
			[]string{"2026-01-01T04:30:00Z", "2026-01-02T04:30:00Z", "2026-01-09T04:30:00Z", "2026-01-15T04:30:00Z",
				"2026-01-16T04:30:00Z", "2026-01-23T04:30:00Z", "2026-01-30T04:30:00Z"}},
		{"0 0 1-7 * 1", "UTC", "2025-12-31T12:00:00Z", "2026-01-31T00:00:00Z",
			day("2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05", "2026-01-06", "2026-01-07",
				"2026-01-12", "2026-01-19", "2026-01-26")},
		// Day-of-week starts with '*': both must match; none in January.
		{"0 0 */10 * 6", "UTC", "2025-12-31T12:00:00Z", "2026-02-28T00:00:00Z",
			day("2026-01-31", "2026-02-21")},
		{"0 0 *,13 * 5", "UTC", "2025-12-31T12:00:00Z", "2026-01-31T00:00:00Z",
			day("2026-01-02", "2026-01-09", "2026-01-16", "2026-01-23", "2026-01-30")},
		{"0 0 13 * *,5", "UTC", "2025-12-31T12:00:00Z", "2026-02-28T00:00:00Z",
			day("2026-01-13", "2026-02-13")},
		// 7 is Sunday (4 January 2026), as is 0.
		{"* * * * 7", "UTC", "2026-01-03T23:58:00Z", "2026-01-04T00:02:00Z",
			[]string{"2026-01-04T00:00:00Z", "2026-01-04T00:01:00Z", "2026-01-04T00:02:00Z"}},
		{"* * * * 7", "UTC", "2026-01-04T23:57:00Z", "2026-01-05T00:01:00Z",
			[]string{"2026-01-04T23:58:00Z", "2026-01-04T23:59:00Z"}},
		{"0 0 * * 5-7", "UTC", "2025-12-31T12:00:00Z", "2026-01-12T00:00:00Z",
			day("2026-01-02", "2026-01-03", "2026-01-04", "2026-01-09", "2026-01-10", "2026-01-11")},
		{"0 0 * * fri-sun", "UTC", "2025-12-31T12:00:00Z", "2026-01-12T00:00:00Z",
			day("2026-01-02", "2026-01-03", "2026-01-04", "2026-01-09", "2026-01-10", "2026-01-11")},
		{"0 0 * * 1-7/2", "UTC", "2025-12-31T12:00:00Z", "2026-01-08T00:00:00Z",
			day("2026-01-02", "2026-01-04", "2026-01-05", "2026-01-07")},
		{"0 0 * * 0-7", "UTC", "2025-12-31T12:00:00Z", "2026-01-03T00:00:00Z",
			day("2026-01-01", "2026-01-02", "2026-01-03")},
		{"0 0 1 1-12/3 *", "UTC", "2025-12-31T12:00:00Z", "2026-12-31T00:00:00Z",
			day("2026-01-01", "2026-04-01", "2026-07-01", "2026-10-01")},
		{"@weekly", "UTC", "2025-12-31T12:00:00Z", "2026-01-31T00:00:00Z",
			day("2026-01-04", "2026-01-11", "2026-01-18", "2026-01-25")},
		{"@monthly", "UTC", "2025-12-31T12:00:00Z", "2026-03-01T00:00:00Z",
			day("2026-01-01", "2026-02-01", "2026-03-01")},
		{"0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2029-04-15T00:00:00Z", day("2028-02-29")},

		// Berlin, clocks forward (01:20 CET to 03:10 CEST). Fixed-time jobs
		// whose time was skipped run right after the jump, at 03:00 CEST
		// (01:00Z), each of them; wildcard jobs follow the clock.
		{"30 2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T01:00:00Z"}},
		{"0 2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T01:00:00Z"}},
		{"0,30 2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"}},
		{"0-59/30 2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"}},
		{"0 2,3 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-29T01:00:00Z"}},
		{"0 3 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T01:00:00Z"}},
		{"59 1 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T00:59:00Z"}},
		{"*/30 * * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z"}},
		{"30 * * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T00:30:00Z"}},
		{"*/15 2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", nil},
		{"0 */2 * * *", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", nil},
		{"@hourly", "Europe/Berlin", "2026-03-29T00:20:00Z", "2026-03-29T01:10:00Z", []string{"2026-03-29T01:00:00Z"}},

		// Berlin, clocks back (01:40 CEST to 03:40 CET; 02:00-02:59 twice).
		// Fixed-time jobs run in the first 02:xx only, wildcard jobs in both.
		{"30 2 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z", []string{"2026-10-25T00:30:00Z"}},
		{"0,30 2 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"}},
		{"0-59/30 2 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z"}},
		{"0 3 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z", []string{"2026-10-25T02:00:00Z"}},
		{"*/30 * * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z",
				"2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}},
		{"30 * * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},
		{"*/20 2 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:40:00Z",
				"2026-10-25T01:00:00Z", "2026-10-25T01:20:00Z", "2026-10-25T01:40:00Z"}},
		{"0 */2 * * *", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"}},
		{"@hourly", "Europe/Berlin", "2026-10-24T23:40:00Z", "2026-10-25T02:40:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},

		// New York, clocks forward (01:20 EST to 03:10 EDT).
		{"30 2 * * *", "America/New_York", "2026-03-08T06:20:00Z", "2026-03-08T07:10:00Z", []string{"2026-03-08T07:00:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-03-08T06:20:00Z", "2026-03-08T07:10:00Z", []string{"2026-03-08T06:30:00Z"}},
		{"0 1 * * *", "America/New_York", "2026-03-08T06:20:00Z", "2026-03-08T07:10:00Z", nil},
		{"*/30 * * * *", "America/New_York", "2026-03-08T06:20:00Z", "2026-03-08T07:10:00Z",
			[]string{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z"}},
		// New York, clocks back (00:20 EDT to 02:40 EST; 01:00-01:59 twice).
		{"0 1 * * *", "America/New_York", "2026-11-01T04:20:00Z", "2026-11-01T07:40:00Z", []string{"2026-11-01T05:00:00Z"}},
		{"30 1 * * *", "America/New_York", "2026-11-01T04:20:00Z", "2026-11-01T07:40:00Z", []string{"2026-11-01T05:30:00Z"}},
		{"30 2 * * *", "America/New_York", "2026-11-01T04:20:00Z", "2026-11-01T07:40:00Z", []string{"2026-11-01T07:30:00Z"}},
		{"*/30 * * * *", "America/New_York", "2026-11-01T04:20:00Z", "2026-11-01T07:40:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
				"2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
	}
	for _, c := range cases {
		s, err := Parse(c.expr, mustLoc(t, c.zone))
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		var want []string
		for _, w := range c.cronie {
			if len(want) == 0 || want[len(want)-1] != w {
				want = append(want, w)
			}
		}
		var got []string
		for _, g := range s.Slots(ts(t, c.after), ts(t, c.until), 1000) {
			got = append(got, g.UTC().Format(time.RFC3339))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%q in %s, (%s, %s]:\n got    %v\n cronie %v", c.expr, c.zone, c.after, c.until, got, c.cronie)
		}
	}
}

// TestPrevInvertsNext: Prev(Next(t)) == Next(t) and nothing lies between
// Prev(t) and t, across DST nights.
func TestPrevInvertsNext(t *testing.T) {
	exprs := []string{"30 2 * * *", "0 9 * * *", "*/30 * * * *", "30 1 * * *", "0 0 1 * 5", "15 */3 * * *", "0,30 2 * * *", "*/20 2 * * *",
		"0 9 1 1 *", "30 2 29 2 *", "30 2 * 3,10 0", "15 1 31 */2 *"} // months skipped whole
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"}
	starts := []string{"2026-03-07T00:00:00Z", "2026-03-28T00:00:00Z", "2026-10-24T00:00:00Z", "2026-10-31T00:00:00Z", "2026-04-04T00:00:00Z"}
	for _, z := range zones {
		for _, e := range exprs {
			s, err := Parse(e, mustLoc(t, z))
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range starts {
				for at := ts(t, st); at.Before(ts(t, st).Add(72 * time.Hour)); at = at.Add(17 * time.Minute) {
					n := s.Next(at)
					if p := s.Prev(n); !p.Equal(n) {
						t.Fatalf("%s %s: Prev(Next(%s)=%s) = %s", z, e, at, n, p)
					}
					p := s.Prev(at)
					if p.After(at) {
						t.Fatalf("%s %s: Prev(%s) = %s is after it", z, e, at, p)
					}
					if nn := s.Next(p); nn.Before(at) || (nn.Equal(at) && !p.Equal(at)) {
						t.Fatalf("%s %s: slot %s lies between Prev(%s)=%s and it", z, e, nn, at, p)
					}
				}
			}
		}
	}
}

// TestAgreesWithRobfig: where no DST applies, our parser and walk must give
// exactly the fire times of robfig/cron's parser and Next, for random
// expressions, once robfig's day rule is given cronie's star flags (robfig
// sets its star bit only for a bare * or ?, cronie for any field that begins
// with '*', such as */2).
func TestAgreesWithRobfig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	itoa := strconv.Itoa
	field := func(lo, hi int) string {
		switch r.IntN(5) {
		case 0:
			return "*"
		case 1:
			return itoa(lo + r.IntN(hi-lo+1))
		case 2:
			a := lo + r.IntN(hi-lo+1)
			b := a + r.IntN(hi-a+1)
			return itoa(a) + "-" + itoa(b)
		case 3:
			return "*/" + itoa(1+r.IntN(hi-lo))
		}
		return itoa(lo+r.IntN(hi-lo+1)) + "," + itoa(lo+r.IntN(hi-lo+1))
	}
	zones := []*time.Location{time.UTC, mustLoc(t, "Asia/Kolkata"), mustLoc(t, "Asia/Tokyo")}
	for i := range 400 {
		expr := strings.Join([]string{field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 6)}, " ")
		loc := zones[i%len(zones)]
		ours, err := Parse(expr, loc)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		theirs, err := robfig.ParseStandard(expr)
		if err != nil {
			t.Fatalf("robfig %q: %v", expr, err)
		}
		spec := theirs.(*robfig.SpecSchedule)
		spec.Location = loc
		fs := strings.Fields(expr)
		spec.Dom, spec.Dow = cronieStar(spec.Dom, fs[2]), cronieStar(spec.Dow, fs[4])
		a := time.Date(2026, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), 0, 0, time.UTC)
		b := a
		for range 20 {
			a, b = ours.Next(a), theirs.Next(b)
			if !a.Equal(b) {
				t.Fatalf("%q in %s: ours %s, robfig %s", expr, loc, a, b)
			}
			if a.IsZero() {
				break
			}
		}
	}
}

func cronieStar(bits uint64, field string) uint64 {
	const starBit = 1 << 63 // robfig's
	if field[0] == '*' {
		return bits | starBit
	}
	return bits &^ starBit
}

func TestSlotsAndCount(t *testing.T) {
	s, err := Parse("0 */4 * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	from, to := ts(t, "2026-11-22T00:00:00Z"), ts(t, "2026-11-23T00:00:00Z")
	got := s.Slots(from, to, 100)
	if len(got) != 6 || !got[0].Equal(ts(t, "2026-11-22T04:00:00Z")) || !got[5].Equal(to) {
		t.Fatalf("slots (from, to] = %v", got)
	}
	if n := s.Count(from, to); n != 6 {
		t.Fatalf("count = %d", n)
	}
	every, err := Every(30 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := every.Count(from, to), len(every.Slots(from, to, 1000)); n != 48 || m != 48 {
		t.Fatalf("interval count %d, slots %d, want 48", n, m)
	}
	if p := every.Prev(ts(t, "2026-11-22T10:29:59Z")); !p.Equal(ts(t, "2026-11-22T10:00:00Z")) {
		t.Fatalf("interval prev = %s", p)
	}
}

// TestNever: expressions whose days do not exist in their months are
// recognised without a walk, and say why; the rest fire.
func TestNever(t *testing.T) {
	never := map[string]string{
		"0 0 30 2 *":            "February has no day 30",
		"0 0 31 4 *":            "April has no day 31",
		"0 0 31 2,4,6,9,11 *":   "February, April, June, September and November have no day 31",
		"0 0 30-31 feb *":       "February has no day 30 or 31",
		"0 0 31 2 */7":          "February has no day 31", // day-of-week starts with '*': both must match
		"*/5 * 30,31 2 mon-fri": "",                       // both restricted: any weekday of February
		"0 0 29 2 *":            "",
		"0 0 31 * *":            "",
		"0 0 */30 2 *":          "", // 1 and 31: the 1st exists
		"@yearly":               "",
	}
	from := ts(t, "2026-01-01T00:00:00Z")
	for expr, why := range never {
		s, err := Parse(expr, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Never(); got != why {
			t.Errorf("%q: Never() = %q, want %q", expr, got, why)
		}
		next, prev := s.Next(from), s.Prev(from)
		if why != "" && (!next.IsZero() || !prev.IsZero() || len(s.Slots(from, from.AddDate(100, 0, 0), 10)) > 0) {
			t.Errorf("%q fired: next %s, prev %s", expr, next, prev)
		}
		if why == "" && (next.IsZero() || prev.IsZero()) {
			t.Errorf("%q: next %s, prev %s, want slots", expr, next, prev)
		}
	}
}

// TestEveryDateEveryWeekday proves what Never and the walk's bound rest
// on: within one 400-year Gregorian cycle every date (29 February too)
// falls on every day of the week.
func TestEveryDateEveryWeekday(t *testing.T) {
	seen := map[[3]int]bool{}
	for d := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2400; d = d.AddDate(0, 0, 1) {
		seen[[3]int{int(d.Month()), d.Day(), int(d.Weekday())}] = true
	}
	for m := time.January; m <= time.December; m++ {
		for day := 1; day <= monthDays(m); day++ {
			for w := range 7 {
				if !seen[[3]int{int(m), day, w}] {
					t.Errorf("%s %d never falls on %s", m, day, time.Weekday(w))
				}
			}
		}
	}
	if searchDays < 146097 {
		t.Errorf("the walk covers %d days, less than a Gregorian cycle", searchDays)
	}
}

// TestSyntaxLikeCronie: what cronie's `crontab -T` accepts and refuses.
// astra refuses three things cronie accepts: random ranges (~), which
// would give each runner different slots, and backward ranges outside
// day-of-week, which cronie reads oddly (minute 5-0 as 5-7, 5-0/2 as
// nothing) although man 5 crontab forbids them.
func TestSyntaxLikeCronie(t *testing.T) {
	for _, ok := range []string{
		"0 0 * * 7", "0 0 * * 5-7", "0 0 * * fri-sun", "0 0 * * 5-0", "0 0 * * 1-7/2", "0 0 * * sun-sat",
		"0 0 * jan-mar mon", "0 0 * * MON", "*/61 * * * *", "0 0 31 2 *", "0 0 * * 0-7", "00 09 * * *",
		"0 0 1,15 * 3", "0-59/15 */6 1-31/2 * *", "\t0\t9 * * *",
	} {
		if _, err := Parse(ok, time.UTC); err != nil {
			t.Errorf("%q: cronie accepts it, astra says %v", ok, err)
		}
	}
	for bad, msg := range map[string]string{
		// cronie refuses these too.
		"0 0 ? * *":           `day-of-month field "?": "?" is not cron syntax: use *`,
		"0 0 5/10 * *":        `day-of-month field "5/10": a step needs * or a range: write 5-31/10 or */10`,
		"*-5 * * * *":         `minute field "*-5": "*" is not a number`,
		"0 0 1,,2 * *":        `day-of-month field "1,,2": empty list element`,
		"+5 * * * *":          `minute field "+5": "+5" is not a number`,
		"0 0 * * 8":           `day-of-week field "8": 8 is out of range 0-7`,
		"0 0 * * monday":      `day-of-week field "monday": "monday" is not a number or a name (sun-sat)`,
		"0 0 0 * *":           `day-of-month field "0": 0 is out of range 1-31`,
		"0 24 * * *":          `hour field "24": 24 is out of range 0-23`,
		"*/0 * * * *":         `minute field "*/0": step "0" must be a whole number of at least 1`,
		"1-5/0 * * * *":       `minute field "1-5/0": step "0" must be a whole number of at least 1`,
		"0 0 * 13 *":          `month field "13": 13 is out of range 1-12`,
		"0 0 * foo *":         `month field "foo": "foo" is not a number or a name (jan-dec)`,
		"0 0 * * mon-fri-sat": `day-of-week field "mon-fri-sat": "fri-sat" is not a number or a name (sun-sat)`,
		// cronie accepts these; astra does not.
		"~ * * * *":     `minute field "~": random ranges (~) are not supported`,
		"5-0 * * * *":   `minute field "5-0": range 5-0 runs backwards`,
		"0 0 * * 5-0/2": `day-of-week field "5-0/2": range 5-0 runs backwards`,
		"@reboot":       "@reboot has no meaning for astra: use run_immediately",
	} {
		_, err := Parse(bad, time.UTC)
		if err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("%q: got %v, want %s...", bad, err, msg)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		expr   string
		offset int
		msg    string
	}{
		{"0 25 * * *", 2, `hour field "25": 25 is out of range 0-23`},
		{"  61 * * * *", 2, `minute field "61"`},
		{"0 1,25 * * *", 4, `hour field "1,25"`}, // points at the bad element
		{"0 9 * * mon-fri-sat", 8, `day-of-week field`},
		{"0 9 * *", 0, "has 4 fields, want 5"},
		{"0 9 * * * *", 0, "has 6 fields"},
		{"@fortnightly", 0, "unknown descriptor"},
		{"@every soon", 0, "want @every <duration>"},
		{"@every 500ms", 0, "whole number of seconds"},
		{"TZ=UTC 0 9 * * *", 0, "use the timezone key"},
		{"", 0, "empty"},
	}
	for _, c := range cases {
		_, err := Parse(c.expr, time.UTC)
		ce, ok := err.(*Error)
		if !ok {
			t.Errorf("%q: got %v, want *Error", c.expr, err)
			continue
		}
		if ce.Offset != c.offset || !strings.Contains(ce.Msg, c.msg) {
			t.Errorf("%q: got offset %d %q, want offset %d containing %q", c.expr, ce.Offset, ce.Msg, c.offset, c.msg)
		}
	}
	if _, err := Frequency("fortnightly"); err == nil {
		t.Error("unknown frequency accepted")
	}
}

// FuzzParse: parsing never panics, and a spec that parses yields
// consistent, increasing slots.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 9 * * *", "*/15 * * * 1-5", "30 2 * * *", "@weekly", "@every 90s", "0 0 1 * 5", "5-10/2 1,3 */2 jan-jun sun", "0 0 30 2 *", "0 0 */2 * 1", "* * * * 7", "0 0 * * fri-sun", "*/20 2 * * *"} {
		f.Add(s, "Europe/Berlin", int64(1774742400))
	}
	zones := map[string]*time.Location{}
	f.Fuzz(func(t *testing.T, expr, zone string, unix int64) {
		loc, ok := zones[zone]
		if !ok {
			l, err := time.LoadLocation(zone)
			if err != nil {
				l = time.UTC
			}
			zones[zone], loc = l, l
		}
		s, err := Parse(expr, loc)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-*Error %T", err)
			}
			return
		}
		at := time.Unix(unix%(1<<33), 0)
		prev := at
		for range 3 {
			n := s.Next(prev)
			if n.IsZero() {
				return
			}
			if !n.After(prev) {
				t.Fatalf("%q: Next(%s) = %s is not after it", expr, prev, n)
			}
			if p := s.Prev(n); !p.Equal(n) {
				t.Fatalf("%q: Prev(Next) = %s, want %s", expr, p, n)
			}
			prev = n
		}
	})
}

func TestIntervalString(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * time.Minute: "@every 30m", 2 * time.Hour: "@every 2h", 90 * time.Second: "@every 1m30s", 36 * time.Hour: "@every 36h"} {
		s, err := Every(d)
		if err != nil || s.String() != want {
			t.Errorf("Every(%v) = %v %v, want %s", d, s, err, want)
		}
	}
}

// TestSlotsMatchNext: the day walk of Slots gives exactly the slots that
// repeated Next does, across DST nights.
func TestSlotsMatchNext(t *testing.T) {
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Asia/Beirut", "America/Havana"}
	exprs := []string{"*/30 * * * *", "30 2 * * *", "0 0 1 * 5", "@every 45m", "15 1-3 * * *", "@daily", "*/20 0 * * *", "0,30 0-2 * * *"}
	windows := [][2]string{{"2026-03-06T00:00:00Z", "2026-04-06T00:00:00Z"}, {"2026-08-30T00:00:00Z", "2026-11-06T00:00:00Z"}}
	for _, z := range zones {
		for _, e := range exprs {
			s, err := Parse(e, mustLoc(t, z))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range windows {
				slotsMatchNext(t, s, ts(t, w[0]), ts(t, w[1]))
			}
		}
	}
}

func slotsMatchNext(t *testing.T, s *Spec, from, to time.Time) {
	t.Helper()
	var want []time.Time
	for n := s.Next(from); !n.After(to); n = s.Next(n) {
		want = append(want, n)
	}
	got := s.Slots(from, to, 100000)
	if len(got) != len(want) {
		t.Fatalf("%s %s: %d slots, Next gives %d", s.Location(), s, len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("%s %s: slot %d %s, Next gives %s", s.Location(), s, i, got[i], want[i])
		}
	}
	if c := s.Count(from, to); c != len(want) {
		t.Fatalf("%s %s: count %d, %d slots", s.Location(), s, c, len(want))
	}
}

// BenchmarkPrev is what planning asks of every schedule on every run.
func BenchmarkPrev(b *testing.B) {
	s, err := Parse("30 8 * * 1-5", mustLoc(b, "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	at := ts(b, "2026-03-29T12:00:00Z")
	for b.Loop() {
		s.Prev(at)
	}
}

// BenchmarkSlotsDSTDay lists a day of every-minute slots on a night the
// clocks change, the slow path of the walk.
func BenchmarkSlotsDSTDay(b *testing.B) {
	s, err := Parse("* * * * *", mustLoc(b, "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	from, to := ts(b, "2026-10-24T22:00:00Z"), ts(b, "2026-10-25T23:00:00Z")
	for b.Loop() {
		s.Slots(from, to, 10000)
	}
}

// TestCountExactOverYears: Count equals the number of slots Slots lists
// over ranges of years with edges inside days and across every clock
// change of the zones, without a cap.
func TestCountExactOverYears(t *testing.T) {
	zones := []string{"UTC", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago", "Asia/Kathmandu"}
	exprs := []string{"*/5 * * * *", "30 2 * * *", "0 0 1 * 5", "15 1-3 * * 1-5", "0 */4 1,15 * *", "@every 7m"}
	ranges := [][2]string{{"2024-02-28T13:37:00Z", "2026-11-22T09:00:00Z"}, {"2025-03-30T00:59:59Z", "2025-10-26T01:00:00Z"}}
	for _, z := range zones {
		for _, e := range exprs {
			s, err := Parse(e, mustLoc(t, z))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range ranges {
				from, to := ts(t, r[0]), ts(t, r[1])
				if got, want := s.Count(from, to), len(s.Slots(from, to, 1<<30)); got != want {
					t.Errorf("%s %s (%s, %s]: count %d, %d slots", z, e, r[0], r[1], got, want)
				}
			}
		}
	}
}

// BenchmarkCountFiveYears is the longest count planning makes: missed
// slots of an every-5-minutes schedule over five years, in a DST zone.
func BenchmarkCountFiveYears(b *testing.B) {
	s, err := Parse("*/5 * * * *", mustLoc(b, "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	from, to := ts(b, "2021-11-22T00:00:00Z"), ts(b, "2026-11-22T00:00:00Z")
	for b.Loop() {
		s.Count(from, to)
	}
}
