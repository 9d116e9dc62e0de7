package cli

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/spf13/cobra"
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
					if rep, rerr := r.RefuseTrigger(cmd.Context(), args[0], "signature", why); rerr != nil {
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
