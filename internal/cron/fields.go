package cron

import (
	"fmt"
	"strconv"
	"strings"
)

// fields are the bit sets of a 5-field expression, kept as cronie keeps them
// (src/entry.c): bit n set means value n matches.
type fields struct {
	minute, hour, dom, month, dow uint64 // dow: bit 0 is Sunday; 7 is folded onto it
	// domStar and dowStar: the field began with '*' (cronie's DOM_STAR and
	// DOW_STAR), which turns the day rule from "either matches" into "both
	// match", even for a restricting field such as */2.
	domStar, dowStar bool
	// wild: the minute or the hour field began with '*' (cronie's MIN_STAR,
	// HR_STAR). Around clock changes such jobs follow the clock, while the
	// others ("fixed-time" jobs) catch up skipped times and never repeat.
	wild bool
}

type bounds struct {
	name   string
	lo, hi int
	names  []string // 3-letter names for lo, lo+1, ... (month, day-of-week)
}

var fieldBounds = [5]bounds{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day-of-month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day-of-week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// descriptors are cronie's @ shortcuts, as the expressions man 5 crontab
// equates them with (the star flags come out as cronie sets them).
var descriptors = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// fieldError is a problem in one field; at is its byte offset in the field.
type fieldError struct {
	at  int
	msg string
}

// parseFields reads the five fields with cronie's grammar (get_list,
// get_range, get_number): a comma-separated list of *, */step, n, n-m or
// n-m/step, names only in month and day-of-week. On error it returns the
// index of the bad field.
func parseFields(fs []string) (fields, int, *fieldError) {
	var f fields
	dst := [5]*uint64{&f.minute, &f.hour, &f.dom, &f.month, &f.dow}
	for i, text := range fs {
		bits, err := parseField(text, fieldBounds[i])
		if err != nil {
			return fields{}, i, err
		}
		*dst[i] = bits
	}
	if f.dow&(1<<7) != 0 {
		f.dow = f.dow&^(1<<7) | 1
	}
	f.wild = fs[0][0] == '*' || fs[1][0] == '*'
	f.domStar, f.dowStar = fs[2][0] == '*', fs[4][0] == '*'
	return f, 0, nil
}

func parseField(text string, b bounds) (uint64, *fieldError) {
	var bits uint64
	at := 0
	for _, r := range strings.Split(text, ",") {
		v, err := parseRange(r, b)
		if err != nil {
			err.at += at
			return 0, err
		}
		bits |= v
		at += len(r) + 1
	}
	return bits, nil
}

func parseRange(r string, b bounds) (uint64, *fieldError) {
	fail := func(format string, args ...any) (uint64, *fieldError) {
		return 0, &fieldError{msg: fmt.Sprintf(format, args...)}
	}
	span, stepText, hasStep := strings.Cut(r, "/")
	lo, hi := b.lo, b.hi
	switch {
	case r == "":
		return fail("empty list element")
	case strings.Contains(r, "~"):
		return fail("random ranges (~) are not supported: every runner must compute the same slots")
	case span == "?":
		return fail(`"?" is not cron syntax: use *`)
	case span == "*":
	default:
		var ferr *fieldError
		if lo, hi, ferr = parseSpan(span, stepText, hasStep, b); ferr != nil {
			return 0, ferr
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || strings.ContainsAny(stepText, "+-") {
			return fail("step %q must be a whole number of at least 1", stepText)
		}
		step = n
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, nil
}

// parseSpan reads a value or a range lo-hi of a field, before its step
// (hasStep: there is one, stepText).
func parseSpan(span, stepText string, hasStep bool, b bounds) (lo, hi int, ferr *fieldError) {
	fail := func(format string, args ...any) (int, int, *fieldError) {
		return 0, 0, &fieldError{msg: fmt.Sprintf(format, args...)}
	}
	first, last, isRange := strings.Cut(span, "-")
	var err error
	if lo, err = b.number(first); err != nil {
		return fail("%v", err)
	}
	if !isRange {
		if hasStep {
			return fail("a step needs * or a range: write %s-%d/%s or */%s", first, b.hi, stepText, stepText)
		}
		return lo, lo, nil
	}
	if hi, err = b.number(last); err != nil {
		return fail("%v", err)
	}
	// cronie reads a day-of-week range ending in Sunday (5-0, fri-sun) as
	// ending in 7.
	if b.hi == 7 && hi == 0 && lo > 0 && !hasStep {
		hi = 7
	}
	if lo > hi {
		return fail("range %s runs backwards: the first number must not exceed the second", span)
	}
	return lo, hi, nil
}

// number reads a decimal number or, where the field has them, a 3-letter
// name (any case), and checks it against the field's bounds.
func (b bounds) number(s string) (int, error) {
	for i, n := range b.names {
		if strings.EqualFold(s, n) {
			return b.lo + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || strings.ContainsAny(s, "+-") {
		if b.names != nil {
			return 0, fmt.Errorf("%q is not a number or a name (%s-%s)", s, b.names[0], b.names[len(b.names)-1])
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < b.lo || n > b.hi {
		return 0, fmt.Errorf("%d is out of range %d-%d", n, b.lo, b.hi)
	}
	return n, nil
}
