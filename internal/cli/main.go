package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Main runs astra as a process with args, the process's streams and its
// environment, and returns the exit status. The first SIGINT or SIGTERM
// cancels the run: running tools' process groups are killed, their runs
// recorded as failed, nothing more is pushed, and the report says what
// was committed and pushed (exit 130). A second signal ends astra at once.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return Execute(ctx, args, os.Stdin, os.Stdout, os.Stderr, os.Environ())
}
