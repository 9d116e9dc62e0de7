package cli

import (
	"strings"
	"testing"
	"time"
)

func TestInactivityWarning(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d) }
	for _, c := range []struct {
		name            string
		last, now, next time.Time
		want            string // "" for no warning
	}{
		{"active, a daily schedule", day(0), day(1), day(2), ""},
		{"no commit for 50 days", day(0), day(50), day(51), "the last commit on main was 2026-01-01, 50 days ago"},
		{"the next slot 51 days after the last commit", day(0), day(1), day(51), "the next slot of any schedule is 2026-02-21, 51 days later"},
		{"the next slot 50 days after it", day(0), day(1), day(50), ""},
		{"no timed schedule", day(0), day(10), time.Time{}, ""},
	} {
		got := inactivityWarning("main", c.last, c.now, c.next)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
