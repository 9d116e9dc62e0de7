package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/report"
)

func (a *app) reportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write the static HTML dashboard of this month (one file, no external assets)",
		Long: `report writes DIR/index.html: spend per day against the limits, runs and
failures per schedule, pending approvals with their age, dead letters and
the next runs, all from the ledger. One self-contained file: publish it with
GitHub Pages or open it from disk.`,
		Example: `  astra report --out site && xdg-open site/index.html`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			d, err := report.Collect(cfg, a.store(), a.now(), a.getenv("GITHUB_REPOSITORY"), serverURL(a.getenv))
			if err != nil {
				return errkind.Usage(err)
			}
			if a.json() {
				return a.printJSON(d)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			p := filepath.Join(out, "index.html")
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
		},
	}
	cmd.Flags().StringVar(&out, "out", "site", "directory to write index.html to")
	return cmd
}
