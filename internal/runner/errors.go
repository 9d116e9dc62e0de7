package runner

import (
	"errors"
	"fmt"
)

// The error kinds of this package. Rule: every error a Runner method
// returns wraps exactly one of them (errors.Is), so the CLI can map it to
// an exit code without knowing where it came from. The cause stays in the
// chain, so gitops and forge sentinels (gitops.ErrRejected,
// forge.ErrNotFound, context.Canceled) remain visible to callers.
var (
	// ErrUsage: the request makes no sense for this configuration or this
	// ledger (an unknown run, a schedule without a rollback); nothing ran.
	ErrUsage = errors.New("usage")
	// ErrLedger: the ledger cannot be read or safely appended to (damage
	// that needs a human or a repair); nothing ran.
	ErrLedger = errors.New("ledger")
	// ErrInfra: the machine, git or GitHub failed after retries.
	ErrInfra = errors.New("infrastructure")
)

// Error is an error of one kind. Its message is its cause's; Hint, when
// set, says what to do about it.
type Error struct {
	Kind error // ErrUsage, ErrLedger or ErrInfra
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

func usagef(format string, args ...any) error {
	return &Error{Kind: ErrUsage, Err: fmt.Errorf(format, args...)}
}

func infraf(format string, args ...any) error {
	return &Error{Kind: ErrInfra, Err: fmt.Errorf(format, args...)}
}

func ledgerErr(err error, hint string) error {
	return &Error{Kind: ErrLedger, Err: err, Hint: hint}
}

// kinded makes sure err carries a kind, at the boundary of every exported
// method: an error that reached it unclassified came from the machine
// (a file that could not be written, a cancelled context), so it is
// infrastructure.
func kinded(err error) error {
	if err == nil || errors.Is(err, ErrUsage) || errors.Is(err, ErrLedger) || errors.Is(err, ErrInfra) {
		return err
	}
	return &Error{Kind: ErrInfra, Err: err}
}
