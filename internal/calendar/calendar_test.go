package calendar

import (
	"strings"
	"testing"
	"time"
)

const ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" +
	"BEGIN:VEVENT\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20261224\r\nDTEND;VALUE=DATE:20261227\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nSUMMARY:New year\r\nDTSTART;VALUE=DATE:20270101\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nSUMMARY:Freeze\r\nDTSTART:20261215T180000Z\r\nDTEND:20261216T060000Z\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nDTSTART;TZID=Europe/Berlin:20261201T090000\r\nDURATION:PT2H\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nDTSTART:20261202T090000\r\nDTEND:20261202\r\n T100000\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

func TestParseICS(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	spans, err := ParseICS([]byte(ics))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ from, to string }{
		{"2026-12-24T00:00:00-05:00", "2026-12-27T00:00:00-05:00"},
		{"2027-01-01T00:00:00-05:00", "2027-01-02T00:00:00-05:00"},
		{"2026-12-15T18:00:00Z", "2026-12-16T06:00:00Z"},
		{"2026-12-01T08:00:00Z", "2026-12-01T10:00:00Z"},
		{"2026-12-02T09:00:00-05:00", "2026-12-02T10:00:00-05:00"}, // floating, folded
	}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d: %v", len(spans), len(want), spans)
	}
	for i, w := range want {
		from, to := spans[i].In(ny)
		wf, _ := time.Parse(time.RFC3339, w.from)
		wt, _ := time.Parse(time.RFC3339, w.to)
		if !from.Equal(wf) || !to.Equal(wt) {
			t.Errorf("event %d in New York = %v .. %v, want %v .. %v", i, from, to, wf, wt)
		}
	}
	if from, _ := spans[3].In(berlin); !from.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, berlin)) {
		t.Errorf("TZID event = %v", from)
	}
}

func TestParseICSRefuses(t *testing.T) {
	ev := func(body string) string { return "BEGIN:VEVENT\n" + body + "END:VEVENT\n" }
	for _, c := range []struct{ in, want string }{
		{ev("DTSTART;VALUE=DATE:20261224\nRRULE:FREQ=YEARLY\n"), "line 3: recurring events (RRULE)"},
		{ev("DTSTART:20261224T100000Z\n"), "line 1: event: no DTEND or DURATION"},
		{ev("DTEND:20261224T100000Z\n"), "no DTSTART"},
		{ev("DTSTART:20261224T100000Z\nDTEND:20261224T090000Z\n"), "ends before it starts"},
		{ev("DTSTART;TZID=Mars/Olympus:20261224T100000\nDURATION:PT1H\n"), `unknown time zone "Mars/Olympus"`},
		{ev("DTSTART:2026-12-24\n"), "not a time"},
		{ev("DTSTART:20261224T100000Z\nDURATION:1H\n"), "not a duration"},
		{"BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261224\n", "no END:VEVENT"},
	} {
		_, err := ParseICS([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseICS(%q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestDurationsAndDates(t *testing.T) {
	for in, want := range map[string]time.Duration{"P1D": 24 * time.Hour, "P1W": 7 * 24 * time.Hour, "PT1H30M": 90 * time.Minute, "P1DT12H": 36 * time.Hour} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v", in, got, err)
		}
	}
	sp, err := Date("2026-12-25")
	if err != nil || !sp.Floating || sp.To.Sub(sp.From) != 24*time.Hour {
		t.Errorf("Date = %+v, %v", sp, err)
	}
	if _, err := Date("25.12.2026"); err == nil {
		t.Error("Date took 25.12.2026")
	}
}
