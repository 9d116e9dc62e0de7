package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/report"
)

// reportOptions are `astra report`'s flags.
type reportOptions struct {
	out string // the directory index.html is written to
}

func (a *app) reportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write the static HTML dashboard of this month (one file, no external assets)",
		Long: `report writes DIR/index.html: spend per day against the limits, runs and
failures per schedule, pending approvals with their age, dead letters and
the next runs, all from the ledger. One self-contained file: publish it with
GitHub Pages or open it from disk.`,
		Example: `  astra report --out site && xdg-open site/index.html`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.runReport(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.out, "out", "site", "directory to write index.html to")
	return cmd
}

// runReport is `astra report`.
func (a *app) runReport(_ context.Context, o reportOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	stop := a.busy("reading the month for the dashboard")
	d, err := report.Collect(cfg, a.store(), a.now(), a.getenv("GITHUB_REPOSITORY"), serverURL(a.getenv))
	stop()
	if err != nil {
		return errkind.Usage(err)
	}
	d.Name = a.repoSlug()
	if a.json() {
		return a.printJSON(d)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	p := filepath.Join(o.out, "index.html")
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := report.HTML(f, d); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "wrote %s\n", p)
	return nil
}
