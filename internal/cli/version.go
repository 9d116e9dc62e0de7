package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/buildinfo"
)

// versionOptions are `astra version`'s: it has no flags of its own.
type versionOptions struct{}

func (a *app) versionCmd() *cobra.Command {
	var o versionOptions
	return &cobra.Command{
		Use:   "version",
		Short: "Print the astra version, the commit it was built from and that commit's date",
		Example: `  astra version
  astra version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runVersion(cmd.Context(), o) },
	}
}

// runVersion is `astra version`.
func (a *app) runVersion(_ context.Context, _ versionOptions) error {
	if a.json() {
		return a.printJSON(buildinfo.Get())
	}
	fmt.Fprintln(a.stdout, "astra", buildinfo.String())
	return nil
}
