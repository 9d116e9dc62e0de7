package cli

import (
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

func (a *app) triggerCmd() *cobra.Command {
	var f runFlags
	var payloadFile, signature, key string
	cmd := &cobra.Command{
		Use:   "trigger <event>",
		Short: "Run the schedules that have on_event: <event>, through every gate",
		Long: `trigger runs every enabled schedule whose on_event is <event> now, through
every gate, marked scheduled_vs_manual: event. The event's JSON payload
(--payload-file, or - for stdin) reaches tools as ASTRA_EVENT (http tools:
"event" in the body). The idempotency key defaults to a hash of event and
payload: an event relayed twice runs once.

When ASTRA_TRIGGER_SECRET is set, --signature must be the hex HMAC-SHA256 of
the payload with that secret ("sha256=<hex>", as X-Astra-Signature and
X-Hub-Signature-256 send it), compared in constant time; a wrong or missing
signature is refused, recorded, and exits 2.`,
		Example: `  astra trigger n8n.newsletter.ready --payload-file event.json
  astra trigger deploy.requested --payload-file - --signature "$SIG" < body.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			var payload []byte
			switch payloadFile {
			case "":
			case "-":
				payload, err = io.ReadAll(a.stdin)
			default:
				payload, err = os.ReadFile(payloadFile)
			}
			if err != nil {
				return usageErrorf("--payload-file: %v", err)
			}
			if len(payload) > 0 && !json.Valid(payload) {
				return usageErrorf("--payload-file %s is not valid JSON", payloadFile)
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, len(cfg.Schedules))
			if err != nil {
				return err
			}
			secret := a.getenv("ASTRA_TRIGGER_SECRET")
			switch {
			case secret == "" && signature != "":
				return usageErrorf("--signature given but ASTRA_TRIGGER_SECRET is not set: there is nothing to check it with")
			case secret != "" && !hmac.Equal([]byte(strings.TrimSpace(signature)), []byte(executor.Sign([]byte(secret), payload))):
				why := "signature does not match the payload"
				if signature == "" {
					why = "no --signature, but ASTRA_TRIGGER_SECRET requires one"
				}
				if !f.dryRun {
					rep, rerr := r.Record(cmd.Context(), func(*state.State) ([]*ledger.Event, error) {
						return []*ledger.Event{{Event: ledger.TriggerRefused, Status: "refused", Reason: "signature", Error: why + " (event " + args[0] + ")"}}, nil
					})
					if rerr != nil {
						return a.finishRecord(rep, rerr)
					}
				}
				return usageErrorf("trigger %s refused: %s; nothing ran", args[0], why)
			}
			rep, err := r.Trigger(cmd.Context(), args[0], payload, key)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&payloadFile, "payload-file", "", "JSON payload of the event (- for stdin)")
	cmd.Flags().StringVar(&signature, "signature", "", "sha256=<hex HMAC of the payload> when ASTRA_TRIGGER_SECRET is set")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "the event's idempotency key (default: hash of event and payload)")
	return cmd
}

func (a *app) rollbackCmd() *cobra.Command {
	var f runFlags
	var by string
	cmd := &cobra.Command{
		Use:   "rollback <run>",
		Short: "Run a completed run's compensating command (the tool's rollback)",
		Long: `rollback runs the rollback command of the tool of a completed run (seed 003
compensating actions), through the same gates as the run: scopes, rate
limits, budgets. You running it is the approval; when the task policy names
an approver role, --by must be one of its logins. It records
rollback.completed or rollback.failed. A tool without a rollback says so.`,
		Example: `  astra rollback 'sch_743e179e@2026-11-23T00:00:00Z#1' --by octocat
  astra tasks list --status completed --schedule production_deploy   # find the run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if by == "" {
				by = whoami(a.getenv)
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			rep, err := r.Rollback(cmd.Context(), args[0], by)
			return a.finishRun(rep, err)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&by, "by", "", "who rolls back (default $GITHUB_ACTOR or $USER)")
	return cmd
}

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
	var task string
	purge := &cobra.Command{
		Use:   "purge --task <schedule|run>",
		Short: "Quarantine every memory written by a schedule or a run (recorded; entries are kept for audit)",
		Example: `  astra memory purge --task ledger_digest
  astra memory purge --task 'sch_c30c9e23@2026-11-22T09:00:00Z#1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if task == "" {
				return usageErrorf("--task is required: a schedule id or name, or a run")
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
				return usageErrorf("no live memory was written by %q (see `astra memory list`)", task)
			}
			r, err := a.newRunner(cfg, runFlags{}, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			rep, err := r.Record(cmd.Context(), func(*state.State) ([]*ledger.Event, error) {
				return []*ledger.Event{memory.Purged(task, whoami(a.getenv), n)}, nil
			})
			if err == nil {
				fmt.Fprintf(a.stdout, "quarantined %d memory entries written by %s; recall skips them\n", n, task)
			}
			return a.finishRecord(rep, err)
		},
	}
	purge.Flags().StringVar(&task, "task", "", "schedule (id or name) or run whose memories to quarantine")
	cmd.AddCommand(list, purge)
	return cmd
}
