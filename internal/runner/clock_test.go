package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
)

// source is a trusted time that answers t, or err.
func source(name string, t time.Time, err error) TimeSource {
	return TimeSource{Name: name, Time: func(context.Context) (time.Time, error) { return t, err }}
}

func trusted(srcs ...TimeSource) func(*Options) {
	return func(o *Options) { o.TrustedTime = srcs }
}

// A runner whose clock is a year ahead of the trusted time records
// nothing, exits 3 and runs nothing; the same runner with the right clock
// records. Five minutes either way is the bound.
func TestClockHeldToTrustedTime(t *testing.T) {
	e := newEnv(t, daily)
	real := time.Date(2026, 11, 22, 9, 0, 30, 0, time.UTC)
	_, err := e.runner("2027-11-22T09:00:30Z", trusted(source("GitHub's API", real, nil))).RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "is 365 days ahead of GitHub's API (2026-11-22T09:00:30Z)") {
		t.Fatalf("a year ahead: %v", err)
	}
	if n := len(e.events()); n != 0 || e.exec.runs("a") != 0 {
		t.Fatalf("a refused run recorded %d events, ran %d", n, e.exec.runs("a"))
	}
	for _, at := range []string{"2026-11-22T09:05:29Z", "2026-11-22T08:55:31Z"} {
		if _, err := e.runner(at, trusted(source("GitHub's API", real, nil))).RunDue(context.Background()); err != nil {
			t.Fatalf("%s, within 5 minutes: %v", at, err)
		}
	}
	_, err = e.runner("2026-11-22T08:55:29Z", trusted(source("GitHub's API", real, nil))).RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "5m1s behind GitHub's API") {
		t.Fatalf("5m1s behind: %v", err)
	}
}

// A source that does not answer hands over to the next; when none
// answers the run records nothing (an outage, exit 3), since a clock that
// cannot be checked is not a clock that passed.
func TestClockSourcesInOrder(t *testing.T) {
	e := newEnv(t, daily)
	real := time.Date(2026, 11, 22, 9, 0, 30, 0, time.UTC)
	down := source("GitHub's API", time.Time{}, errkind.Infraf("GitHub is down"))
	if _, err := e.runner("2026-11-22T09:00:30Z", trusted(down, source("the git remote", real, nil))).RunDue(context.Background()); err != nil {
		t.Fatalf("GitHub down, the remote answers: %v", err)
	}
	before := len(e.events())
	_, err := e.runner("2026-11-22T10:00:30Z", trusted(down, source("the git remote", time.Time{}, errors.New("connection refused")))).RunDue(context.Background())
	if !errors.Is(err, errkind.ErrInfra) || !strings.Contains(err.Error(), "no trusted time to check this machine's clock against (GitHub is down; connection refused): nothing was recorded") {
		t.Fatalf("nothing answers: %v", err)
	}
	if n := len(e.events()); n != before {
		t.Fatalf("the refused run recorded %d events", n-before)
	}
}

// A test clock is not the machine's: it is not held to a trusted time,
// and every event it records, the month's checkpoint included, says so.
// A dry run records nothing and asks nothing.
func TestTestClockMarksEvents(t *testing.T) {
	e := newEnv(t, daily)
	asked := 0
	counting := TimeSource{Name: "GitHub's API", Time: func(context.Context) (time.Time, error) { asked++; return time.Now(), nil }}
	test := func(o *Options) { o.TestClock = true }
	e.runDue("2026-10-31T08:00:00Z", trusted(counting), test)
	e.runDue("2026-11-01T09:00:30Z", trusted(counting), test)
	e.runDue("2026-11-02T09:00:30Z", trusted(counting), func(o *Options) { o.DryRun = true })
	if asked != 0 {
		t.Fatalf("asked the time %d times", asked)
	}
	evs := e.events()
	kinds := map[ledger.Kind]bool{}
	for _, ev := range evs {
		if ev.Clock != ledger.ClockTest {
			t.Fatalf("unmarked: %+v", ev)
		}
		kinds[ev.Event] = true
	}
	if !kinds[ledger.LedgerCheckpoint] || !kinds[ledger.RunCompleted] {
		t.Fatalf("events %v", kinds)
	}
}

// Without any trusted time the run goes on, with the warning it was given.
func TestClockUntimed(t *testing.T) {
	e := newEnv(t, daily)
	rep := e.runDue("2026-11-22T09:00:30Z", func(o *Options) { o.Untimed = "cannot be checked" })
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "cannot be checked") {
		t.Fatalf("warnings %v", rep.Warnings)
	}
}

// A correction of the clock is dated by the machine that records it, which
// is held to a trusted time like any run: a machine still a year ahead
// cannot record one.
func TestCorrectClockHeldToTrustedTime(t *testing.T) {
	e := newEnv(t, daily)
	e.runDue("2026-11-22T08:00:00Z", func(o *Options) { o.TestClock = true })
	e.runDue("2027-11-22T09:00:30Z", func(o *Options) { o.TestClock = true })
	real := time.Date(2026, 11, 22, 9, 0, 30, 0, time.UTC)
	_, _, err := e.runner("2027-11-22T10:00:00Z", trusted(source("GitHub's API", real, nil))).
		CorrectClock(context.Background(), real.Add(-time.Hour), "a year ahead", ownerIdentity())
	if !errors.Is(err, errkind.ErrInfra) || e.count(ledger.ClockCorrected, "") != 0 {
		t.Fatalf("a correction by a clock a year ahead: %v", err)
	}
	_, c, err := e.runner("2026-11-22T09:00:40Z", trusted(source("GitHub's API", real, nil))).
		CorrectClock(context.Background(), real.Add(-time.Hour), "a year ahead", ownerIdentity())
	if err != nil || e.count(ledger.ClockCorrected, "") != 1 || len(c.Early) != 1 {
		t.Fatalf("the right clock's correction: %v %+v", err, c)
	}
	if o := outcome(t, e.runDue("2026-11-22T09:00:50Z"), "a"); o.Action != ActionRan {
		t.Fatalf("a after the correction: %+v", o)
	}
}
