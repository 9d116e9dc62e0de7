package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// triggerOptions are trigger's flags and argument.
type triggerOptions struct {
	event       string
	run         runFlags
	payloadFile string
	signature   string // --signature, else $ASTRA_TRIGGER_SIGNATURE
	jwt         string // --jwt, else $ASTRA_TRIGGER_JWT
	githubEvent string // --github-event, else $ASTRA_GITHUB_EVENT
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
payload: an event relayed twice runs once. A key that completed does not
run again for ` + keyRetention + ` from its completion, across months too; after that
the same key is a new request.

Who triggers: a person holding the trigger permission (GitHub's actor in CI,
a mapped git email locally), or a caller from another system with a JWT
(--jwt or ASTRA_TRIGGER_JWT) that an issuer configured in policies signed;
its claims map to an actor whose scopes must grant each triggered tool.

When ASTRA_TRIGGER_SECRET is set the request must be signed (--signature or
ASTRA_TRIGGER_SIGNATURE): "t=<unix time>,v1=<hex HMAC-SHA256 of
'<t>\n<event>\n<payload>'>", accepted within 5 minutes of t and only once,
so it can be neither replayed nor used for another event; or GitHub's own
X-Hub-Signature-256 "sha256=<hex HMAC of the payload>" for a relayed GitHub
webhook. That one covers the body only, so the delivery's X-GitHub-Event
must come with it (--github-event, or ASTRA_GITHUB_EVENT) and the event
triggered must be github.<that event>; its payload is its idempotency key.
A JWT must carry iat and jti, live no longer than its issuer's max_lifetime
(default 1h) and is accepted once; its expiry is checked against this
machine's clock, never --now. A wrong, missing or replayed signature or
JWT is refused, recorded, and exits 2. A JWT whose issuer's keys cannot be
fetched was not checked at all: nothing runs, nothing is recorded, exit 3.

A schedule its actor's rate limit holds back is recorded as skipped with
the time the limit resets; the trigger then exits 4 and says when the same
request may be sent again (--json: the outcome's rate_limit).`,
		Example: `  astra trigger n8n.newsletter.ready --payload-file event.json
  astra trigger deploy.requested --payload-file - --signature "$SIG" < body.json
  astra trigger github.push --payload-file body.json --signature "$X_HUB_SIGNATURE_256" --github-event push
  astra trigger order.paid --payload-file order.json --jwt "$OIDC_TOKEN"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.event = args[0]
			return a.runTrigger(cmd.Context(), o)
		},
	}
	o.run.register(cmd)
	cmd.Flags().StringVar(&o.payloadFile, "payload-file", "", "JSON payload of the event (- for stdin)")
	cmd.Flags().StringVar(&o.signature, "signature", "", "t=<unix>,v1=<hex> (or sha256=<hex> from GitHub) when ASTRA_TRIGGER_SECRET is set")
	cmd.Flags().StringVar(&o.jwt, "jwt", "", "a JWT from an issuer configured in policies (default $ASTRA_TRIGGER_JWT)")
	cmd.Flags().StringVar(&o.githubEvent, "github-event", "", "the X-GitHub-Event of a relayed GitHub delivery signed sha256=... (default $ASTRA_GITHUB_EVENT)")
	cmd.Flags().StringVar(&o.key, "idempotency-key", "", "the event's idempotency key (default: hash of event and payload); a key that completed does not run again for "+keyRetention)
	byFlag(cmd, &o.by)
	return cmd
}

// runTrigger is `astra trigger`. identity.AuthenticateTrigger decides
// whether the request goes on and as whom; a refusal is recorded here.
func (a *app) runTrigger(ctx context.Context, o triggerOptions) error {
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
	caller, err := identity.AuthenticateTrigger(ctx, identity.TriggerAuth{
		Event: o.event, Payload: payload, Key: o.key, // identity's clock: the machine's, never --now
		Secret:      []byte(a.getenv("ASTRA_TRIGGER_SECRET")),
		Signature:   cmp.Or(strings.TrimSpace(o.signature), strings.TrimSpace(a.getenv("ASTRA_TRIGGER_SIGNATURE"))),
		GitHubEvent: cmp.Or(strings.TrimSpace(o.githubEvent), strings.TrimSpace(a.getenv("ASTRA_GITHUB_EVENT"))),
		JWT:         cmp.Or(strings.TrimSpace(o.jwt), strings.TrimSpace(a.getenv("ASTRA_TRIGGER_JWT"))),
		Verifier:    identity.NewVerifier(cfg.Policies.Issuers, nil, nil),
		Person:      a.person(cfg, o.by, o.run),
	})
	var refusal *identity.TriggerRefusal
	switch {
	case errors.As(err, &refusal):
		return a.refuseTrigger(ctx, r, o, refusal)
	case errors.Is(err, errkind.ErrInfra):
		return fmt.Errorf("trigger %s: %w; nothing ran and nothing was recorded: run it again later", o.event, err)
	case err != nil:
		return err
	}
	rep, err := r.Trigger(ctx, runner.TriggerRequest{Event: o.event, Payload: payload, Key: o.key, By: caller.By,
		Signature: caller.Signature.ID, SignatureExpires: caller.Signature.Expires, GitHubEvent: caller.GitHubEvent})
	return a.finishRun(rep, err)
}

// refuseTrigger records a refused trigger (outside a dry run): a refused
// signature as trigger.refused, a refused caller as action.refused.
func (a *app) refuseTrigger(ctx context.Context, r *runner.Runner, o triggerOptions, refusal *identity.TriggerRefusal) error {
	if !refusal.Signature {
		return r.Refuse(ctx, model.VerbTrigger, o.event, refusal.By, refusal.Why, nil)
	}
	if !o.run.dryRun {
		if _, err := r.RefuseTrigger(ctx, o.event, "signature", refusal.Why); err != nil {
			return err
		}
	}
	return errkind.Refusedf("trigger %s refused: %s; nothing ran", o.event, refusal.Why)
}
