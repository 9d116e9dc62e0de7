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

// TestNextTable holds known answers, written out by hand, including the
// DST transitions of 2026: Europe/Berlin goes forward on 29 March (02:00 ->
// 03:00) and back on 25 October (03:00 -> 02:00); America/New_York goes
// forward on 8 March and back on 1 November.
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
		// Vixie: day-of-month 1 OR Friday.
		{"dom or dow", "0 0 1 * 5", "UTC", "2026-11-25T00:00:00Z",
			[]string{"2026-11-27T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z"}},
		// With a * in day-of-week, day-of-month alone decides.
		{"dom only", "0 0 13 * *", "UTC", "2026-11-01T00:00:00Z",
			[]string{"2026-11-13T00:00:00Z", "2026-12-13T00:00:00Z"}},
		{"leap day", "0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"@daily", "@daily", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-23T00:00:00Z"}},
		{"@weekly is sunday", "@weekly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-29T00:00:00Z"}},
		{"@monthly", "@monthly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-12-01T00:00:00Z"}},
		{"@hourly", "@hourly", "UTC", "2026-11-22T10:00:00Z", []string{"2026-11-22T11:00:00Z"}},
		{"@every", "@every 15m", "UTC", "2026-11-22T10:07:00Z",
			[]string{"2026-11-22T10:15:00Z", "2026-11-22T10:30:00Z"}},

		// Berlin spring forward: 02:30 does not exist; it fires at 03:30 CEST
		// (01:30Z), once, and the next day at 02:30 CEST (00:30Z) again.
		{"berlin skipped hour", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}},
		// Hourly at :30 on that night: 01:30 CET, then 03:30 CEST (02:30 is
		// shifted onto it and fires once), then 04:30 CEST.
		{"berlin hourly across gap", "30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"}},
		// Berlin fall back: 02:30 occurs twice (CEST 00:30Z, CET 01:30Z); it
		// fires at the first only.
		{"berlin repeated hour", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		// Daily 09:00 Berlin keeps local time across the change.
		{"berlin daily across fall back", "0 9 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T08:00:00Z", "2026-10-26T08:00:00Z"}},
		// New York spring forward: 02:30 EST does not exist; fires 03:30 EDT (07:30Z).
		{"new york skipped hour", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		// New York fall back: 01:30 occurs twice (EDT 05:30Z, EST 06:30Z).
		{"new york repeated hour", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Every 30 minutes through the repeated hour: each wall time once.
		{"new york half-hourly fall back", "*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
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

// TestPrevInvertsNext: Prev(Next(t)) == Next(t) and nothing lies between
// Prev(t) and t, across DST nights.
func TestPrevInvertsNext(t *testing.T) {
	exprs := []string{"30 2 * * *", "0 9 * * *", "*/30 * * * *", "30 1 * * *", "0 0 1 * 5", "15 */3 * * *"}
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

// TestAgreesWithRobfig: where no DST applies, our walk must give exactly the
// fire times of robfig/cron's own Next, for random expressions.
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
		theirs.(*robfig.SpecSchedule).Location = loc
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
	if n := s.Count(from, to, 100); n != 6 {
		t.Fatalf("count = %d", n)
	}
	if n := s.Count(from, to, 3); n != 3 {
		t.Fatalf("bounded count = %d", n)
	}
	every, err := Every(30 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := every.Count(from, to, 1000), len(every.Slots(from, to, 1000)); n != 48 || m != 48 {
		t.Fatalf("interval count %d, slots %d, want 48", n, m)
	}
	if p := every.Prev(ts(t, "2026-11-22T10:29:59Z")); !p.Equal(ts(t, "2026-11-22T10:00:00Z")) {
		t.Fatalf("interval prev = %s", p)
	}
}

func TestNever(t *testing.T) {
	s, err := Parse("0 0 30 2 *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Next(ts(t, "2026-01-01T00:00:00Z")); !n.IsZero() {
		t.Fatalf("30 February fired at %s", n)
	}
	if p := s.Prev(ts(t, "2026-01-01T00:00:00Z")); !p.IsZero() {
		t.Fatalf("30 February fired at %s", p)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		expr   string
		offset int
		msg    string
	}{
		{"0 25 * * *", 2, `hour field "25"`},
		{"  61 * * * *", 2, `minute field "61"`},
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
	for _, s := range []string{"0 9 * * *", "*/15 * * * 1-5", "30 2 * * *", "@weekly", "@every 90s", "0 0 1 * 5", "5-10/2 1,3 */2 jan-jun sun", "0 0 30 2 *"} {
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
	for _, z := range []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		for _, e := range []string{"*/30 * * * *", "30 2 * * *", "0 0 1 * 5", "@every 45m", "15 1-3 * * *"} {
			s, err := Parse(e, mustLoc(t, z))
			if err != nil {
				t.Fatal(err)
			}
			from, to := ts(t, "2026-03-06T00:00:00Z"), ts(t, "2026-04-06T00:00:00Z")
			var want []time.Time
			for n := s.Next(from); !n.After(to); n = s.Next(n) {
				want = append(want, n)
			}
			got := s.Slots(from, to, 100000)
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d slots, Next gives %d", z, e, len(got), len(want))
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Fatalf("%s %s: slot %d %s, Next gives %s", z, e, i, got[i], want[i])
				}
			}
			if c := s.Count(from, to, 5); c != min(5, len(want)) {
				t.Fatalf("bounded count %d", c)
			}
		}
	}
}
