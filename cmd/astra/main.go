// Command astra is a GitOps batch runner for autonomous work.
package main

import (
	"fmt"
	"os"

	"github.com/astra-gitops/astra/internal/cli"
)

func main() {
	code := cli.Main(os.Args[1:])
	// The GitHub Action's step execs astra (no shell stays behind to hold
	// the environment), so astra records its own exit status as the step
	// output exit_status, in the GITHUB_OUTPUT file the step names here.
	if p := os.Getenv("ASTRA_EXIT_STATUS_OUTPUT"); p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintf(f, "exit_status=%d\n", code)
			f.Close()
		}
	}
	os.Exit(code)
}
