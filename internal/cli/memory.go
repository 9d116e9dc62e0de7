package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

func (a *app) memoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "List and purge agent memory (var/memory) by provenance",
		Example: `  astra memory list
  astra memory purge --task research`,
	}
	cmd.AddCommand(a.memoryListCmd(), a.memoryPurgeCmd())
	return cmd
}

// memoryListOptions are `astra memory list`'s: it has no flags of its own.
type memoryListOptions struct{}

func (a *app) memoryListCmd() *cobra.Command {
	var o memoryListOptions
	return a.limitFlag(&cobra.Command{
		Use:   "list",
		Short: "Show stored memory, newest first, with provenance and estimated tokens",
		Example: `  astra memory list
  astra memory list --json | jq '.[] | select(.purged | not)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runMemoryList(cmd.Context(), o) },
	})
}

// runMemoryList is `astra memory list`.
func (a *app) runMemoryList(_ context.Context, _ memoryListOptions) error {
	es, err := memory.Read(a.repo(), a.now())
	if err != nil {
		return err
	}
	slices.Reverse(es)
	return printRows(a, es, "no memory", "AT\tRUN\tTOKENS\tPURGED\tTEXT", func(e memory.Entry) string {
		return fmt.Sprintf("%s\t%s\t%d\t%v\t%s", e.At.Format(time.RFC3339), e.RunID, e.EstimatedTokens, e.Purged,
			truncate(strings.ReplaceAll(e.Text, "\n", " / "), 80))
	})
}

// memoryPurgeOptions are `astra memory purge`'s flags.
type memoryPurgeOptions struct {
	task string // a schedule (id or name) or a run
	by   string
	run  runFlags
}

func (a *app) memoryPurgeCmd() *cobra.Command {
	var o memoryPurgeOptions
	cmd := &cobra.Command{
		Use:   "purge --task <schedule|run>",
		Short: "Quarantine every memory written by a schedule or a run (recorded; entries are kept for audit)",
		Example: `  astra memory purge --task ledger_digest
  astra memory purge --task 'sch_c30c9e23@2026-11-22T09:00:00Z#1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runMemoryPurge(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.task, "task", "", "schedule (id or name) or run whose memories to quarantine")
	byFlag(cmd, &o.by)
	cmd.Flags().BoolVar(&o.run.noPush, "no-push", false, "commit locally, do not push")
	return cmd
}

// runMemoryPurge is `astra memory purge`.
func (a *app) runMemoryPurge(ctx context.Context, o memoryPurgeOptions) error {
	if o.task == "" {
		return errkind.Usagef("--task is required: a schedule id or name, or a run")
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	task := o.task
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
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, 1)
	if err != nil {
		return err
	}
	id, err := a.who(ctx, r, cfg, model.VerbMemoryPurge, task, o.by, o.run)
	if err != nil {
		return err
	}
	rep, err := r.PurgeMemory(ctx, task, id, n)
	if err == nil {
		fmt.Fprintf(a.stdout, "quarantined %d memory entries written by %s; recall skips them\n", n, task)
	}
	return a.finishRecord(rep, err)
}
