package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// MaxClockSkew is how far a run's clock may be from a trusted time before
// the run refuses to record: runners' clocks differ by seconds, a clock
// that is minutes off is wrong, and what it would decide is dated wrong
// (a clock ahead decides slots that then never come due again).
const MaxClockSkew = 5 * time.Minute

// TimeSource is a time astra trusts more than this machine's clock: the
// Date of an answer of GitHub's API, or of the git remote's smart-HTTP
// server. Commit times are not one: anyone who can push writes them.
type TimeSource struct {
	Name string // what answers, for messages: "GitHub's API (api.github.com)"
	Time func(ctx context.Context) (time.Time, error)
}

// checkClock holds the run's clock to a trusted time before it records
// anything, once per runner: the first source that answers decides; a
// clock more than MaxClockSkew from it, or no source answering, is an
// ErrInfra (exit 3): nothing is recorded and the next run tries again. A
// dry run records nothing and a test clock is not the machine's, so
// neither is checked. Without sources (a remote over ssh or a path, no
// GitHub) the run goes on, and says so when Options.Untimed asks it to.
func (s *session) checkClock(ctx context.Context) error {
	r := s.r
	if r.opts.DryRun || r.opts.TestClock || r.clockChecked {
		return nil
	}
	if len(r.opts.TrustedTime) == 0 {
		r.clockChecked = true
		if r.opts.Untimed != "" {
			s.report.Warnings = append(s.report.Warnings, r.opts.Untimed)
		}
		return nil
	}
	var failed []string
	for _, src := range r.opts.TrustedTime {
		t, err := src.Time(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			failed = append(failed, r.opts.Redact.String(err.Error()))
			continue
		}
		d := s.now.Sub(t)
		if d.Abs() > MaxClockSkew {
			dir := "ahead of"
			if d < 0 {
				dir = "behind"
			}
			return &errkind.Error{Kind: errkind.ErrInfra, Err: fmt.Errorf("this machine's clock (%s) is %s %s %s (%s), more than the %s allowed: nothing was recorded",
				s.now.Format(time.RFC3339), span(d.Abs()), dir, src.Name, t.Format(time.RFC3339), MaxClockSkew),
				Hint: "A run dated wrong would decide slots at the wrong time (a clock ahead leaves the schedules waiting for it). " +
					"Set the clock right (NTP); the next run checks again."}
		}
		r.clockChecked = true
		return nil
	}
	return errkind.Infraf("no trusted time to check this machine's clock against (%s): nothing was recorded; the next run tries again",
		strings.Join(failed, "; "))
}

// span says a duration in words a person reads at a glance.
func span(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}
