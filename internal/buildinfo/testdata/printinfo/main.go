// Command printinfo prints buildinfo.String(), for the -ldflags test.
package main

import (
	"fmt"

	"github.com/astra-gitops/astra/internal/buildinfo"
)

func main() { fmt.Println(buildinfo.String()) }
