package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

// TestAuthenticateTrigger covers every branch of the trigger's
// authentication: the signature scheme and the secret's rules, then a JWT
// or a person. Keys come from a real identity provider over TLS; the
// outage is a real server answering 503.
func TestAuthenticateTrigger(t *testing.T) {
	_, iss, verifier := setupJWT(t)
	down := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	downIss := *iss
	downIss.JWKSURL = down.URL + "/keys"
	unreachable := NewVerifier([]*model.Issuer{&downIss}, down.Client(), func() time.Time { return jwtNow })

	std, extra := claims(iss.Issuer, nil)
	goodJWT := sign(t, jose.RS256, rsaKey, "rsa1", std, extra)
	forgedJWT := sign(t, jose.RS256, rogueRSAKey, "rsa1", std, extra)
	std10, extra10 := claims(iss.Issuer, func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(jwtNow.AddDate(10, 0, 0)) })
	tenYears := sign(t, jose.RS256, rsaKey, "rsa1", std10, extra10)

	secret := []byte("relay-secret-1")
	payload := []byte(`{"order":42}`)
	const event = "order.paid"
	signed := SignTrigger(secret, event, payload, jwtNow.Add(-10*time.Second))
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	github := "sha256=" + hex.EncodeToString(mac.Sum(nil)) // X-Hub-Signature-256
	person := Env{Getenv: func(string) string { return "" }, GitEmail: func() (string, error) { return "me@example.com", nil },
		Identities: map[string]string{"me@example.com": "octocat"}}
	stranger := Env{Getenv: func(string) string { return "" }, GitEmail: func() (string, error) { return "who@example.com", nil }}

	for _, c := range []struct {
		name   string
		auth   TriggerAuth
		kind   error  // nil: authenticated
		sig    bool   // a refusal of the signature (else of the caller)
		want   string // in the error, or the caller's login
		signed bool   // the caller carries a timestamped signature's id
		github string // the GitHub event the caller's signature binds
	}{
		{name: "no secret, no signature: the person", auth: TriggerAuth{Person: person}, want: "octocat"},
		{name: "no secret, a signature given", auth: TriggerAuth{Signature: signed, Person: person}, kind: errkind.ErrUsage,
			want: "ASTRA_TRIGGER_SECRET is not set"},
		{name: "secret, no signature", auth: TriggerAuth{Secret: secret, Person: person}, kind: errkind.ErrRefused, sig: true,
			want: "no signature, but ASTRA_TRIGGER_SECRET requires one"},
		{name: "timestamped signature", auth: TriggerAuth{Secret: secret, Signature: signed, Person: person}, want: "octocat", signed: true},
		{name: "timestamped signature for another event", auth: TriggerAuth{Event: "order.refund", Secret: secret, Signature: signed, Person: person},
			kind: errkind.ErrRefused, sig: true, want: "does not match event order.refund"},
		{name: "timestamped signature too old", auth: TriggerAuth{Secret: secret, Signature: signed, Person: person, Clock: func() time.Time { return jwtNow.Add(time.Hour) }},
			kind: errkind.ErrRefused, sig: true, want: "outside the 5m0s window"},
		{name: "malformed signature", auth: TriggerAuth{Secret: secret, Signature: "v1=abc", Person: person}, kind: errkind.ErrRefused, sig: true,
			want: `signature must look like "t=<unix seconds>,v1=<64 hex digits>"`},
		{name: "GitHub's signature", auth: TriggerAuth{Event: "github.push", GitHubEvent: "push", Secret: secret, Signature: github, Person: person},
			want: "octocat", github: "push"},
		{name: "GitHub's signature, wrong", auth: TriggerAuth{Event: "github.push", GitHubEvent: "push", Secret: []byte("another-secret"), Signature: github, Person: person},
			kind: errkind.ErrRefused, sig: true, want: "does not match the payload"},
		{name: "GitHub's signature without the delivery's event", auth: TriggerAuth{Event: "github.push", Secret: secret, Signature: github, Person: person},
			kind: errkind.ErrRefused, sig: true, want: "GitHub's signature covers the body only: name the delivery's event with --github-event"},
		{name: "GitHub's signature of a push for another event", auth: TriggerAuth{Event: "ops.cleanup", GitHubEvent: "push", Secret: secret, Signature: github, Person: person},
			kind: errkind.ErrRefused, sig: true, want: "the delivery is a GitHub push event: its signed body may trigger github.push only, not ops.cleanup"},
		{name: "GitHub's signature of a push for another GitHub event", auth: TriggerAuth{Event: "github.release", GitHubEvent: "push", Secret: secret, Signature: github, Person: person},
			kind: errkind.ErrRefused, sig: true, want: "may trigger github.push only, not github.release"},
		{name: "GitHub's signature with an idempotency key", auth: TriggerAuth{Event: "github.push", GitHubEvent: "push", Secret: secret, Signature: github, Key: "k", Person: person},
			kind: errkind.ErrUsage, want: "drop --idempotency-key"},
		{name: "a person who cannot be established", auth: TriggerAuth{Person: stranger}, kind: errkind.ErrRefused,
			want: "who@example.com is not mapped"},
		{name: "JWT", auth: TriggerAuth{JWT: goodJWT, Verifier: verifier, Person: stranger}, want: "repo:octo/widgets:ref:refs/heads/main"},
		{name: "JWT valid for ten years", auth: TriggerAuth{JWT: tenYears, Verifier: verifier}, kind: errkind.ErrRefused,
			want: "is valid for 3653 days (exp − iat), longer than the 1h0m0s"},
		{name: "JWT with a timestamped signature", auth: TriggerAuth{Secret: secret, Signature: signed, JWT: goodJWT, Verifier: verifier},
			want: "repo:octo/widgets:ref:refs/heads/main", signed: true},
		{name: "JWT that does not verify", auth: TriggerAuth{JWT: forgedJWT, Verifier: verifier}, kind: errkind.ErrRefused,
			want: "signature does not verify"},
		{name: "JWT without issuers", auth: TriggerAuth{JWT: goodJWT}, kind: errkind.ErrRefused, want: "is not configured under issuers"},
		{name: "JWT whose issuer is down", auth: TriggerAuth{JWT: goodJWT, Verifier: unreachable}, kind: errkind.ErrInfra,
			want: "503 Service Unavailable"},
		{name: "a bad signature is refused before the JWT is checked", auth: TriggerAuth{Secret: secret, JWT: goodJWT, Verifier: unreachable},
			kind: errkind.ErrRefused, sig: true, want: "no signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.auth
			a.Payload = payload
			if a.Event == "" {
				a.Event = event
			}
			if a.Clock == nil {
				a.Clock = func() time.Time { return jwtNow }
			}
			got, err := AuthenticateTrigger(context.Background(), a)
			if c.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got.By.Login != c.want || !got.By.Verified || (got.Signature.ID != "") != c.signed || got.GitHubEvent != c.github {
					t.Fatalf("caller %+v, want %s (signed %v)", got, c.want, c.signed)
				}
				return
			}
			if errkind.Of(err) != c.kind || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v (kind %v), want kind %v saying %q", err, errkind.Of(err), c.kind, c.want)
			}
			var ref *TriggerRefusal
			if refused := errors.As(err, &ref); refused != (c.kind == errkind.ErrRefused) || (refused && ref.Signature != c.sig) {
				t.Fatalf("refusal %+v: want refused %v of the signature %v", ref, c.kind == errkind.ErrRefused, c.sig)
			}
			if got.By.Login != "" {
				t.Errorf("a caller %+v came with the error", got.By)
			}
		})
	}
}

// A trigger's signature window is the machine's clock's: without a clock
// of its own, AuthenticateTrigger asks time.Now, so a signature made a
// month ago is refused whatever time a run is asked to pretend it is.
func TestTriggerWindowIsTheMachinesClock(t *testing.T) {
	secret, payload := []byte("relay-secret-1"), []byte(`{"order":42}`)
	person := Env{Getenv: func(string) string { return "" }, By: "octocat", Unverified: true}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{{time.Now(), true}, {time.Now().Add(-30 * 24 * time.Hour), false}, {time.Now().Add(30 * 24 * time.Hour), false}} {
		_, err := AuthenticateTrigger(context.Background(), TriggerAuth{Event: "order.paid", Payload: payload, Secret: secret,
			Signature: SignTrigger(secret, "order.paid", payload, c.at), Person: person})
		if (err == nil) != c.want {
			t.Errorf("signed at %s: %v, want accepted %v", c.at.Format(time.RFC3339), err, c.want)
		}
	}
}
