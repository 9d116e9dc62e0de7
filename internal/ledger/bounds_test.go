package ledger

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/money"
)

// Values at and beyond the bounds of every numeric field (and time) of an
// Event and its Usage.
var (
	boundInt64s = []int64{0, 1, -1, MaxCount, MaxCount + 1, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	boundInts   = []int{0, 1, -1, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt, math.MinInt}
	boundUSDs   = []money.USD{0, 1, -1, money.Max, -money.Max, money.Max + 1, -money.Max - 1, math.MaxInt64, math.MinInt64}
	boundFloats = []float64{0, math.Copysign(0, -1), 5e-324, 1e-7, 0.5, 1, 1e21, math.MaxFloat64, -math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	boundTimes  = []time.Time{{}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(math.MaxInt64/2, 0),
		time.Unix(math.MinInt64/2, 0), t0}
)

// asBounded is e as the encoder writes it: each field within what the
// decoder reads back.
func asBounded(e Event) Event {
	bt := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		u := min(max(t.UTC().Unix(), minTime.Unix()), maxTime.Unix())
		return time.Unix(u, 0).UTC()
	}
	e.TS, e.Slot, e.ExpiresAt, e.RetryAt = bt(e.TS), bt(e.Slot), bt(e.ExpiresAt), bt(e.RetryAt)
	e.Tier, e.Attempt, e.PR = int(small(e.Tier)), int(small(e.Attempt)), int(small(e.PR))
	e.Usage.Cost, e.Spent, e.Limit = e.Usage.Cost.Clamp(), e.Spent.Clamp(), e.Limit.Clamp()
	if math.IsNaN(e.Threshold) || math.IsInf(e.Threshold, 0) {
		e.Threshold = 0
	}
	return e
}

// The encoder never writes a value its decoder refuses: every numeric field
// of an Event and its Usage, and every time, at and beyond its bounds, one
// at a time and at random together, is written as a line that decodes to
// the value within its bound, and writes the same bytes again.
func TestCodecBounds(t *testing.T) {
	check := func(e Event) {
		t.Helper()
		line := AppendJSON(nil, &e)
		var got Event
		if err := Unmarshal(line, &got); err != nil {
			t.Fatalf("the decoder refuses what the encoder wrote: %v\n%s", err, line)
		}
		want := asBounded(e)
		equalEvents(t, &got, &want)
		if again := AppendJSON(nil, &got); string(again) != string(line) {
			t.Fatalf("written again differently:\n%s\n%s", line, again)
		}
	}
	ints := []func(*Event) *int64{
		func(e *Event) *int64 { return &e.Seq }, func(e *Event) *int64 { return &e.Usage.Tokens },
		func(e *Event) *int64 { return &e.Usage.WallClockMS }, func(e *Event) *int64 { return &e.Usage.ToolCalls },
	}
	smalls := []func(*Event) *int{func(e *Event) *int { return &e.Tier }, func(e *Event) *int { return &e.Attempt }, func(e *Event) *int { return &e.PR }}
	usds := []func(*Event) *money.USD{func(e *Event) *money.USD { return &e.Usage.Cost }, func(e *Event) *money.USD { return &e.Spent },
		func(e *Event) *money.USD { return &e.Limit }}
	times := []func(*Event) *time.Time{func(e *Event) *time.Time { return &e.TS }, func(e *Event) *time.Time { return &e.Slot },
		func(e *Event) *time.Time { return &e.ExpiresAt }, func(e *Event) *time.Time { return &e.RetryAt }}
	for _, f := range ints {
		for _, v := range boundInt64s {
			e := *sample(1)
			*f(&e) = v
			check(e)
		}
	}
	for _, f := range smalls {
		for _, v := range boundInts {
			e := *sample(1)
			*f(&e) = v
			check(e)
		}
	}
	for _, f := range usds {
		for _, v := range boundUSDs {
			e := *sample(1)
			*f(&e) = v
			check(e)
		}
	}
	for _, v := range boundFloats {
		e := *sample(1)
		e.Threshold = v
		check(e)
	}
	for _, f := range times {
		for _, v := range boundTimes {
			e := *sample(1)
			*f(&e) = v
			check(e)
		}
	}
	r := rand.New(rand.NewPCG(30, 1))
	for range 5000 {
		e := *sample(r.IntN(100))
		for _, f := range ints {
			*f(&e) = boundInt64s[r.IntN(len(boundInt64s))]
		}
		for _, f := range smalls {
			*f(&e) = boundInts[r.IntN(len(boundInts))]
		}
		for _, f := range usds {
			*f(&e) = boundUSDs[r.IntN(len(boundUSDs))]
		}
		for _, f := range times {
			*f(&e) = boundTimes[r.IntN(len(boundTimes))]
		}
		e.Threshold = boundFloats[r.IntN(len(boundFloats))]
		check(e)
	}
}

// Usage sums saturate at their bounds: counts at MaxCount, money at
// money.Max; a negative count adds nothing.
func TestUsageAddSaturates(t *testing.T) {
	huge := Usage{Tokens: math.MaxInt64 - 10, Cost: money.Max, WallClockMS: math.MaxInt64, ToolCalls: MaxCount}
	var sum Usage
	for range 18_446 {
		sum = sum.Add(huge)
	}
	if want := (Usage{Tokens: MaxCount, Cost: money.Max, WallClockMS: MaxCount, ToolCalls: MaxCount}); sum != want {
		t.Fatalf("sum = %+v, want %+v", sum, want)
	}
	if got := (Usage{Tokens: 5}).Add(Usage{Tokens: -7}); got.Tokens != 5 {
		t.Fatalf("a negative count changed the sum: %+v", got)
	}
}
