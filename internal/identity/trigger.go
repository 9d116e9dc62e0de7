package identity

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// TriggerAuth is what authenticates one `astra trigger`: how its request
// is signed, and who sends it.
type TriggerAuth struct {
	Event   string
	Payload []byte
	Key     string // --idempotency-key, "" when not given
	// Secret is ASTRA_TRIGGER_SECRET. When set, every request must be
	// signed with it; when not, a signature has nothing to be checked with.
	Secret    []byte
	Signature string // --signature, else ASTRA_TRIGGER_SIGNATURE
	// GitHubEvent is the relayed delivery's X-GitHub-Event (--github-event,
	// else ASTRA_GITHUB_EVENT): GitHub's signature covers only the body,
	// so the event name must come with it, and Event must be github.<it>.
	GitHubEvent string
	JWT         string // --jwt, else ASTRA_TRIGGER_JWT: a caller from another system
	// Clock is the machine's clock (nil: time.Now), never a what-if time:
	// a signature's window is the real one, whatever --now says.
	Clock    func() time.Time
	Verifier *Verifier // checks a JWT against the policies' issuers; nil: none configured
	Person   Env       // who a person is, when there is no JWT (Resolve)
}

// TriggerCaller is an authenticated trigger.
type TriggerCaller struct {
	By Identity
	// Signature is set for a timestamped signature ("t=...,v1=..."): its
	// ID is recorded so the request cannot be replayed. GitHub's relayed
	// signature covers no time, so it leaves this zero.
	Signature TriggerSignature
	// GitHubEvent is the X-GitHub-Event of a relayed GitHub delivery whose
	// signature verified ("" otherwise), recorded with the trigger.
	GitHubEvent string
}

// TriggerRefusal is a trigger refused before anything ran: its signature
// (Signature true: missing, wrong, late) or its caller (an identity that
// cannot be established, a JWT that does not verify). By holds what is
// known of the caller, to record the refusal with. It is of kind
// errkind.ErrRefused.
type TriggerRefusal struct {
	Signature bool
	By        Identity
	Why       string
}

func (e *TriggerRefusal) Error() string { return e.Why }
func (e *TriggerRefusal) Unwrap() error { return errkind.ErrRefused }

// AuthenticateTrigger decides whether a trigger request may go on, and as
// whom. The signature is checked first, so that an unsigned request costs
// nothing more (no key fetch):
//
//   - no ASTRA_TRIGGER_SECRET: a signature given is a usage error (there
//     is nothing to check it with); none is fine;
//   - a secret and no signature: refused;
//   - "sha256=<hex>" (GitHub's X-Hub-Signature-256 of a relayed webhook):
//     checked against the payload, which is all it covers: the delivery's
//     X-GitHub-Event must be given (GitHubEvent) and the event triggered
//     must be github.<it>, or a body signed for one event could trigger
//     another; its payload is its idempotency key, so --idempotency-key
//     with it is a usage error;
//   - otherwise "t=<unix>,v1=<hex>": checked against time, event and
//     payload (VerifyTrigger).
//
// Then the caller: with a JWT, its verified subject (a token that does
// not verify is refused; an issuer whose keys cannot be fetched is an
// outage, errkind.ErrInfra, and refuses nobody); without one, the person
// Resolve finds. Refusals are *TriggerRefusal; other errors are usage
// errors or outages.
func AuthenticateTrigger(ctx context.Context, a TriggerAuth) (TriggerCaller, error) {
	var c TriggerCaller
	sig := strings.TrimSpace(a.Signature)
	refuseSignature := func(why string) (TriggerCaller, error) {
		return TriggerCaller{}, &TriggerRefusal{Signature: true, Why: why}
	}
	switch {
	case len(a.Secret) == 0 && sig != "":
		return c, errkind.Usagef("a signature was given but ASTRA_TRIGGER_SECRET is not set: there is nothing to check it with")
	case len(a.Secret) == 0:
	case sig == "":
		return refuseSignature("no signature, but ASTRA_TRIGGER_SECRET requires one")
	case strings.HasPrefix(sig, "sha256="):
		if a.Key != "" {
			return c, errkind.Usagef("a GitHub-signed relay is identified by its payload: drop --idempotency-key")
		}
		gh := strings.TrimSpace(a.GitHubEvent)
		switch {
		case gh == "":
			return refuseSignature("GitHub's signature covers the body only: name the delivery's event with --github-event <X-GitHub-Event> (or ASTRA_GITHUB_EVENT), " +
				"and trigger github.<that event>")
		case a.Event != "github."+gh:
			return refuseSignature(fmt.Sprintf("the delivery is a GitHub %s event: its signed body may trigger github.%s only, not %s", gh, gh, a.Event))
		}
		if err := VerifyGitHubSignature(a.Secret, sig, a.Payload); err != nil {
			return refuseSignature(err.Error())
		}
		c.GitHubEvent = gh
	default:
		clock := a.Clock
		if clock == nil {
			clock = time.Now
		}
		v, err := VerifyTrigger(a.Secret, sig, a.Event, a.Payload, clock(), 0)
		if err != nil {
			return refuseSignature(err.Error())
		}
		c.Signature = v
	}

	token := strings.TrimSpace(a.JWT)
	if token == "" {
		id, err := Resolve(a.Person)
		if err != nil {
			return TriggerCaller{}, &TriggerRefusal{By: id, Why: err.Error()}
		}
		c.By = id
		return c, nil
	}
	v := a.Verifier
	if v == nil {
		v = NewVerifier(nil, nil, nil)
	}
	id, err := v.Verify(ctx, token)
	switch {
	case errkind.Of(err) == errkind.ErrRefused:
		return TriggerCaller{}, &TriggerRefusal{By: Identity{Source: SourceJWT}, Why: err.Error()}
	case err != nil:
		return TriggerCaller{}, err
	}
	c.By = id
	return c, nil
}
