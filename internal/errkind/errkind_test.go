package errkind

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	cause := errors.New("cause")
	for _, tc := range []struct {
		name        string
		err         error
		interrupted bool
		want        int
	}{
		{"nil", nil, false, ExitOK},
		{"usage", Usagef("bad flag %q", "x"), false, ExitUsage},
		{"refused", Refused(cause), false, ExitUsage},
		{"ledger", Ledger(cause, "restore it"), false, ExitUsage},
		{"infra", Infra(cause), false, ExitInfra},
		{"failed", Failed(), false, ExitFailed},
		{"rate limited", RateLimitedf("try again at %s", "12:00"), false, ExitRateLimited},
		{"an outage outranks a rate limit", fmt.Errorf("%w; %w", RateLimitedf("later"), Infra(cause)), false, ExitInfra},
		{"unclassified is cobra's usage", cause, false, ExitUsage},
		{"interrupted infra", Infra(context.Canceled), true, ExitInterrupted},
		{"interrupted usage still usage", Usage(cause), true, ExitUsage},
		{"wrapped keeps its kind", fmt.Errorf("outer: %w", Infra(cause)), false, ExitInfra},
		{"refusal met with an outage is a refusal", Refused(fmt.Errorf("%w (and recording failed: %w)", cause, Infra(cause))), false, ExitUsage},
	} {
		if got := ExitCode(tc.err, tc.interrupted); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCauseAndHints(t *testing.T) {
	sentinel := errors.New("sentinel")
	err := WithHint(Infraf("pushing: %w", sentinel), "check the network")
	if !errors.Is(err, sentinel) || !errors.Is(err, ErrInfra) {
		t.Fatalf("kind or cause lost: %v", err)
	}
	if got := Hints(Ledger(err, "outer")); len(got) != 2 || got[0] != "outer" || got[1] != "check the network" {
		t.Fatalf("Hints = %q", got)
	}
	if Default(err, ErrUsage) != err {
		t.Fatal("Default reclassified a classified error")
	}
	if !errors.Is(Default(sentinel, ErrInfra), ErrInfra) || Default(nil, ErrInfra) != nil {
		t.Fatal("Default")
	}
	if Failed().Error() != "" {
		t.Fatal("a reported error prints nothing")
	}
}
