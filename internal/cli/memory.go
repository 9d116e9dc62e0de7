package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
)

func (a *app) memoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "List and purge agent memory (var/memory) by provenance",
		Example: `  astra memory list
  astra memory purge --task research`,
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Show stored memory, newest first, with provenance and estimated tokens",
		Example: `  astra memory list
  astra memory list --json | jq '.[] | select(.purged | not)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			es, err := memory.Read(a.repo(), a.now())
			if err != nil {
				return err
			}
			slices.Reverse(es)
			return printRows(a, es, "no memory", "AT\tRUN\tTOKENS\tPURGED\tTEXT", func(e memory.Entry) string {
				return fmt.Sprintf("%s\t%s\t%d\t%v\t%s", e.At.Format(time.RFC3339), e.RunID, e.EstimatedTokens, e.Purged,
					truncate(strings.ReplaceAll(e.Text, "\n", " / "), 80))
			})
		},
	}
	var task, by string
	var f runFlags
	purge := &cobra.Command{
		Use:   "purge --task <schedule|run>",
		Short: "Quarantine every memory written by a schedule or a run (recorded; entries are kept for audit)",
		Example: `  astra memory purge --task ledger_digest
  astra memory purge --task 'sch_c30c9e23@2026-11-22T09:00:00Z#1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if task == "" {
				return errkind.Usagef("--task is required: a schedule id or name, or a run")
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if s := cfg.Schedule(task); s != nil {
				task = s.ID
			}
			es, err := memory.Read(a.repo(), a.now())
			if err != nil {
				return err
			}
			n := memory.Select(es, task)
			if n == 0 {
				return errkind.Usagef("no live memory was written by %q (see `astra memory list`)", task)
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbMemoryPurge, task, by, f)
			if err != nil {
				return err
			}
			rep, err := r.PurgeMemory(cmd.Context(), task, id, n)
			if err == nil {
				fmt.Fprintf(a.stdout, "quarantined %d memory entries written by %s; recall skips them\n", n, task)
			}
			return a.finishRecord(rep, err)
		},
	}
	purge.Flags().StringVar(&task, "task", "", "schedule (id or name) or run whose memories to quarantine")
	byFlag(purge, &by)
	purge.Flags().BoolVar(&f.noPush, "no-push", false, "commit locally, do not push")
	cmd.AddCommand(list, purge)
	return cmd
}
