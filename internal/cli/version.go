package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set by -ldflags "-X github.com/astra-gitops/astra/internal/cli.version=v1.2.3".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the astra version",
		Example: `  astra version
  astra version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json() {
				return a.printJSON(map[string]string{"version": buildVersion()})
			}
			fmt.Fprintln(a.stdout, "astra", buildVersion())
			return nil
		},
	}
}
