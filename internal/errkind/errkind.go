// Package errkind is astra's error vocabulary. An error says what kind of
// failure it is where it arises (the package that saw the outage, the bad
// input or the refusal), wrapped around its cause with %w; the CLI maps a
// kind to an exit code in one switch (ExitCode). Kinds are sentinels
// matched with errors.Is, so a wrapped error keeps its kind and callers
// still see the cause's own sentinels (gitops.ErrRejected, context.Canceled).
//
// The distinction that matters most is Infra against Refused: an identity
// provider, GitHub or the remote being down is an outage (retry, exit 3),
// never a decision about the person or caller (exit 2, recorded as a
// refusal).
package errkind

import (
	"errors"
	"fmt"
)

// The kinds.
var (
	// ErrUsage: the request makes no sense for this configuration or this
	// ledger (bad flags, bad YAML, an unknown run); nothing ran. Exit 2.
	ErrUsage = errors.New("usage")
	// ErrRefused: whoever asked may not do it (a role, a signature, a
	// token that does not verify); recorded where there is a ledger. Exit 2.
	ErrRefused = errors.New("refused")
	// ErrRateLimited: whoever asked may, but not now: an actor rate limit
	// is reached (recorded as a skip with when it resets). The same
	// request may succeed from the reset time the message gives. Exit 4.
	ErrRateLimited = errors.New("rate limited")
	// ErrLedger: the ledger cannot be read or safely appended to (damage
	// that needs a person or a repair); nothing ran. Exit 2.
	ErrLedger = errors.New("ledger")
	// ErrInfra: the machine, git, GitHub or an identity provider failed
	// after retries; running again later may succeed. Exit 3.
	ErrInfra = errors.New("infrastructure")
	// ErrFailed: a run recorded failures, or a check found damage; already
	// reported. Exit 1.
	ErrFailed = errors.New("failed")
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailed      = 1   // some task failed (recorded), or a check found damage
	ExitUsage       = 2   // usage, configuration, refusal or ledger error; nothing ran
	ExitInfra       = 3   // the machine, git or GitHub failed after retries
	ExitRateLimited = 4   // a rate limit held the request back (recorded); try again after its reset time
	ExitInterrupted = 130 // SIGINT or SIGTERM
)

// Error is an error of one kind. Its message is its cause's; Hint, when
// set, says what to do about it.
type Error struct {
	Kind error // one of the kinds above
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// New classifies err as kind, with a hint ("" for none). nil stays nil.
func New(kind, err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Err: err, Hint: hint}
}

// Usage classifies err as bad input.
func Usage(err error) error { return New(ErrUsage, err, "") }

// Usagef is bad input, formatted as fmt.Errorf formats (%w keeps a cause).
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// Refused classifies err as a refusal of whoever asked.
func Refused(err error) error { return New(ErrRefused, err, "") }

// Refusedf is a refusal, formatted as fmt.Errorf formats.
func Refusedf(format string, args ...any) error { return Refused(fmt.Errorf(format, args...)) }

// Infra classifies err as an outage of the machine, git, GitHub or an
// identity provider.
func Infra(err error) error { return New(ErrInfra, err, "") }

// Infraf is an outage, formatted as fmt.Errorf formats.
func Infraf(format string, args ...any) error { return Infra(fmt.Errorf(format, args...)) }

// RateLimitedf is a request held back by a rate limit, formatted as
// fmt.Errorf formats; the message says when to try again.
func RateLimitedf(format string, args ...any) error {
	return New(ErrRateLimited, fmt.Errorf(format, args...), "")
}

// Ledger classifies err as ledger damage, with what to do about it.
func Ledger(err error, hint string) error { return New(ErrLedger, err, hint) }

// Failed is a run that recorded failures or a check that found damage,
// already reported: it prints nothing more.
func Failed() error { return reported{ErrFailed} }

// Reported is an error of kind whose message was already printed.
func Reported(kind error) error { return reported{kind} }

type reported struct{ kind error }

func (reported) Error() string   { return "" }
func (r reported) Unwrap() error { return r.kind }

// Classified reports whether err carries a kind.
func Classified(err error) bool { return Of(err) != nil }

// Of is err's kind, nil when it has none. A chain holding several kinds
// (an outage met while recording a refusal) has the first in this order:
// the ones that mean "nothing ran" before Infra, Infra before Failed.
func Of(err error) error {
	for _, k := range []error{ErrUsage, ErrRefused, ErrLedger, ErrInfra, ErrRateLimited, ErrFailed} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// Default classifies an error that reached a boundary without a kind as
// the given kind (err unchanged when it has one).
func Default(err, kind error) error {
	if err == nil || Classified(err) {
		return err
	}
	return New(kind, err, "")
}

// WithHint adds a hint to err, keeping its kind (Usage when it has none).
func WithHint(err error, hint string) error {
	if err == nil || hint == "" {
		return err
	}
	kind := Of(err)
	if kind == nil {
		kind = ErrUsage
	}
	return &Error{Kind: kind, Err: err, Hint: hint}
}

// Hints are the hints along err's chain, outermost first.
func Hints(err error) []string {
	var out []string
	for e := err; e != nil; {
		var ke *Error
		if !errors.As(e, &ke) {
			break
		}
		if ke.Hint != "" {
			out = append(out, ke.Hint)
		}
		e = ke.Err
	}
	return out
}

// ExitCode is the one mapping from an error to astra's exit status. An
// error without a kind is one of cobra's own flag and argument errors:
// usage. interrupted is whether a signal cancelled the run; a run that
// was interrupted exits 130 unless it never started (usage, ledger).
func ExitCode(err error, interrupted bool) int {
	switch kind := Of(err); {
	case err == nil:
		return ExitOK
	case kind == ErrUsage, kind == ErrRefused, kind == ErrLedger:
		return ExitUsage
	case interrupted:
		return ExitInterrupted
	case kind == ErrRateLimited:
		return ExitRateLimited
	case kind == ErrFailed:
		return ExitFailed
	case kind == ErrInfra:
		return ExitInfra
	}
	return ExitUsage
}
