// Command astra is a GitOps batch runner for autonomous work.
package main

import (
	"os"

	"github.com/astra-gitops/astra/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
