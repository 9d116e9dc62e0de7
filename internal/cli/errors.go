package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/astra-gitops/astra/internal/runner"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitFailed    = 1 // some task failed (recorded), or `ledger verify` found damage
	ExitUsage     = 2 // usage, configuration or ledger error; nothing ran
	ExitInfra     = 3 // the machine, git or GitHub failed after retries
	exitInterrupt = 130
)

// The CLI adds one kind to the runner's (runner.ErrUsage, ErrLedger,
// ErrInfra): errFailed, a run that recorded failures or a check that found
// damage, already reported on stdout.
var errFailed = errors.New("failed")

// exitCode is the one place that maps an error to the process's exit
// status. Errors carry their kind (errors.Is); what has none is one of
// cobra's own flag and argument errors.
func exitCode(ctx context.Context, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, runner.ErrUsage), errors.Is(err, runner.ErrLedger):
		return ExitUsage
	case ctx.Err() != nil:
		return exitInterrupt
	case errors.Is(err, errFailed):
		return ExitFailed
	case errors.Is(err, runner.ErrInfra):
		return ExitInfra
	}
	return ExitUsage
}

// printError writes err and its hints (a runner.Error's Hint) to w.
func printError(w io.Writer, err error) {
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(w, "astra: "+strings.ReplaceAll(msg, "\n", "\n  "))
	}
	for e := err; e != nil; {
		var re *runner.Error
		if !errors.As(e, &re) {
			break
		}
		if re.Hint != "" {
			fmt.Fprintln(w, "  hint: "+strings.ReplaceAll(re.Hint, "\n", "\n  "))
		}
		e = re.Err
	}
}

// usageErrorf is bad input: exit 2, nothing ran.
func usageErrorf(format string, args ...any) error {
	return &runner.Error{Kind: runner.ErrUsage, Err: fmt.Errorf(format, args...)}
}

// usageError classifies err (an input that could not be read) as usage.
func usageError(err error) error { return &runner.Error{Kind: runner.ErrUsage, Err: err} }

// reported is an error of kind whose message was already printed.
type reported struct{ kind error }

func (reported) Error() string   { return "" }
func (r reported) Unwrap() error { return r.kind }
