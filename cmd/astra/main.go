// Command astra is a GitOps batch runner for autonomous work.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/astra-gitops/astra/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
