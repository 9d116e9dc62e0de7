package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/runner"
)

// triggerOptions are trigger's flags.
type triggerOptions struct {
	run         runFlags
	payloadFile string
	signature   string // --signature, else $ASTRA_TRIGGER_SIGNATURE
	jwt         string // --jwt, else $ASTRA_TRIGGER_JWT
	key         string
	by          string
}

func (a *app) triggerCmd() *cobra.Command {
	var o triggerOptions
	cmd := &cobra.Command{
		Use:   "trigger <event>",
		Short: "Run the schedules that have on_event: <event>, through every gate",
		Long: `trigger runs every enabled schedule whose on_event is <event> now, through
every gate, marked scheduled_vs_manual: event. The event's JSON payload
(--payload-file, or - for stdin) reaches tools as ASTRA_EVENT (http tools:
"event" in the body). The idempotency key defaults to a hash of event and
payload: an event relayed twice runs once.

Who triggers: a person holding the trigger permission (GitHub's actor in CI,
a mapped git email locally), or a caller from another system with a JWT
(--jwt or ASTRA_TRIGGER_JWT) that an issuer configured in policies signed;
its claims map to an actor whose scopes must grant each triggered tool.

When ASTRA_TRIGGER_SECRET is set the request must be signed (--signature or
ASTRA_TRIGGER_SIGNATURE): "t=<unix time>,v1=<hex HMAC-SHA256 of
'<t>\n<event>\n<payload>'>", accepted within 5 minutes of t and only once,
so it can be neither replayed nor used for another event; or GitHub's own
X-Hub-Signature-256 "sha256=<hex HMAC of the payload>" for a relayed GitHub
webhook (its payload then is its idempotency key). A wrong, missing or
replayed signature is refused, recorded, and exits 2.`,
		Example: `  astra trigger n8n.newsletter.ready --payload-file event.json
  astra trigger deploy.requested --payload-file - --signature "$SIG" < body.json
  astra trigger order.paid --payload-file order.json --jwt "$OIDC_TOKEN"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runTrigger(cmd.Context(), args[0], o) },
	}
	o.run.register(cmd)
	cmd.Flags().StringVar(&o.payloadFile, "payload-file", "", "JSON payload of the event (- for stdin)")
	cmd.Flags().StringVar(&o.signature, "signature", "", "t=<unix>,v1=<hex> (or sha256=<hex> from GitHub) when ASTRA_TRIGGER_SECRET is set")
	cmd.Flags().StringVar(&o.jwt, "jwt", "", "a JWT from an issuer configured in policies (default $ASTRA_TRIGGER_JWT)")
	cmd.Flags().StringVar(&o.key, "idempotency-key", "", "the event's idempotency key (default: hash of event and payload)")
	byFlag(cmd, &o.by)
	return cmd
}

// runTrigger is `astra trigger`.
func (a *app) runTrigger(ctx context.Context, event string, o triggerOptions) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	var payload []byte
	switch o.payloadFile {
	case "":
	case "-":
		payload, err = io.ReadAll(a.stdin)
	default:
		payload, err = os.ReadFile(o.payloadFile)
	}
	if err != nil {
		return errkind.Usagef("--payload-file: %w", err)
	}
	if len(payload) > 0 && !json.Valid(payload) {
		return errkind.Usagef("--payload-file %s is not valid JSON", o.payloadFile)
	}
	r, err := a.newRunner(cfg, o.run, plan.Filter{}, len(cfg.Schedules))
	if err != nil {
		return err
	}
	req := runner.TriggerRequest{Event: event, Payload: payload, Key: o.key}
	if req.By, err = a.triggerCaller(ctx, r, cfg, event, o); err != nil {
		return err
	}
	refuse := func(why string) error {
		if !o.run.dryRun {
			if rep, rerr := r.RefuseTrigger(ctx, event, "signature", why); rerr != nil {
				return a.finishRecord(rep, rerr)
			}
		}
		return errkind.Usagef("trigger %s refused: %s; nothing ran", event, why)
	}
	secret := []byte(a.getenv("ASTRA_TRIGGER_SECRET"))
	sig := strings.TrimSpace(o.signature)
	if sig == "" {
		sig = strings.TrimSpace(a.getenv("ASTRA_TRIGGER_SIGNATURE"))
	}
	switch {
	case len(secret) == 0 && sig != "":
		return errkind.Usagef("a signature was given but ASTRA_TRIGGER_SECRET is not set: there is nothing to check it with")
	case len(secret) == 0:
	case sig == "":
		return refuse("no signature, but ASTRA_TRIGGER_SECRET requires one")
	case strings.HasPrefix(sig, "sha256="):
		if o.key != "" {
			return errkind.Usagef("a GitHub-signed relay is identified by its payload: drop --idempotency-key")
		}
		if err := identity.VerifyGitHubSignature(secret, sig, payload); err != nil {
			return refuse(err.Error())
		}
	default:
		v, err := identity.VerifyTrigger(secret, sig, event, payload, a.now(), 0)
		if err != nil {
			return refuse(err.Error())
		}
		req.Signature, req.SignatureExpires = v.ID, v.Expires
	}
	rep, err := r.Trigger(ctx, req)
	return a.finishRun(rep, err)
}

// triggerCaller is who triggers: a caller with a JWT, or a person.
func (a *app) triggerCaller(ctx context.Context, r *runner.Runner, cfg *model.Config, event string, o triggerOptions) (identity.Identity, error) {
	token := strings.TrimSpace(o.jwt)
	if token == "" {
		token = strings.TrimSpace(a.getenv("ASTRA_TRIGGER_JWT"))
	}
	if token == "" {
		return a.who(ctx, r, cfg, model.VerbTrigger, event, o.by, o.run)
	}
	id, err := identity.NewVerifier(cfg.Policies.Issuers, nil, a.now).Verify(ctx, token)
	if err != nil {
		return id, r.Refuse(ctx, model.VerbTrigger, event, identity.Identity{Source: identity.SourceJWT}, err.Error())
	}
	return id, nil
}
