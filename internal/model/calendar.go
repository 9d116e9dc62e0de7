package model

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// MaxCalendarEntries caps the entries of one calendar.
const MaxCalendarEntries = 1000

// Calendar is an exclusion calendar: dates (2026-12-25) and paths of
// iCalendar files (.ics) in the repository. YAML takes one entry or a list.
type Calendar []string

func (c *Calendar) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*c = nil
			return nil
		}
		*c = Calendar{n.Value}
		return nil
	case yaml.SequenceNode:
		if len(n.Content) > MaxCalendarEntries {
			return fmt.Errorf("a calendar has %d entries; at most %d", len(n.Content), MaxCalendarEntries)
		}
		out := make(Calendar, 0, len(n.Content))
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
				return fmt.Errorf("each calendar entry must be a date or an .ics file")
			}
			out = append(out, e.Value)
		}
		*c = out
		return nil
	}
	return fmt.Errorf("a calendar is a date, an .ics file or a list of them")
}
