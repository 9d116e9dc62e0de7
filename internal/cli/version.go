package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/buildinfo"
)

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the astra version, the commit it was built from and that commit's date",
		Example: `  astra version
  astra version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json() {
				return a.printJSON(buildinfo.Get())
			}
			fmt.Fprintln(a.stdout, "astra", buildinfo.String())
			return nil
		},
	}
}
