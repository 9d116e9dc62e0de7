package model

import (
	"gopkg.in/yaml.v3"
)

// MaxCalendarEntries caps the entries of one calendar.
const MaxCalendarEntries = 1000

// Calendar is an exclusion calendar: dates (2026-12-25) and paths of
// iCalendar files (.ics) in the repository. YAML takes one entry or a list.
type Calendar []string

func (c *Calendar) UnmarshalYAML(n *yaml.Node) error {
	v, err := oneOrList(n, MaxCalendarEntries, "a calendar has %d entries; at most %d",
		"each calendar entry must be a date or an .ics file", "a calendar is a date, an .ics file or a list of them")
	if err == nil {
		*c = v
	}
	return err
}
