package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
)

// exitCode maps an error to the process's exit status (errkind.ExitCode);
// a cancelled context is an interrupt.
func exitCode(ctx context.Context, err error) int {
	return errkind.ExitCode(err, ctx.Err() != nil)
}

// printError writes err and its hints to w.
func printError(w io.Writer, err error) {
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(w, "astra: "+strings.ReplaceAll(msg, "\n", "\n  "))
	}
	for _, h := range errkind.Hints(err) {
		fmt.Fprintln(w, "  hint: "+strings.ReplaceAll(h, "\n", "\n  "))
	}
}
