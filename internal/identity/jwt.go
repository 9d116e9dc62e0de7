package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

// Skew is the clock difference allowed on a token's exp, nbf and iat.
const Skew = 60 * time.Second

// signingAlgs are the algorithms a token may use: asymmetric only, so a
// public key can never be used as an HMAC secret, and never "none".
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// maxDocument bounds a discovery document or key set.
const maxDocument = 1 << 20

// Verifier checks JWTs of callers from other systems against the issuers
// configured in policies. Keys are fetched on first use and kept for the
// Verifier's life; a key id not among them fetches the set again, once per
// token, so a rotated key is picked up.
type Verifier struct {
	issuers []*model.Issuer
	client  *http.Client
	now     func() time.Time

	mu   sync.Mutex
	keys map[string]*jose.JSONWebKeySet // by issuer
}

// NewVerifier returns a Verifier for issuers. client nil means a client
// with a 10 s timeout; now nil means time.Now.
func NewVerifier(issuers []*model.Issuer, client *http.Client, now func() time.Time) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{issuers: issuers, client: client, now: now, keys: map[string]*jose.JSONWebKeySet{}}
}

// Verify checks token: an allowed algorithm, a signature by its issuer's
// key (found by kid), iss exactly a configured issuer, aud containing that
// issuer's audience, exp and iat present, exp − iat within the issuer's
// max_lifetime, a jti, and exp/nbf/iat within Skew of the Verifier's
// clock (the machine's, never a run's --now); then maps its claims to an
// actor by the issuer's first matching actors entry. The Identity's Login
// is the token's sub, Actor the mapped actor, TokenID a name of its jti
// (recorded: a token is used once) and TokenExpires its exp. Errors never
// quote the token.
//
// A token that does not pass is refused (errkind.ErrRefused); an issuer
// whose keys cannot be fetched is an outage (errkind.ErrInfra): the token
// was not checked, so nothing about its caller is decided.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	id, err := v.verify(ctx, token)
	if err != nil && !errkind.Classified(err) {
		err = errkind.Refused(err)
	}
	return id, err
}

// issuer is the configured issuer named name, or nil.
func (v *Verifier) issuer(name string) *model.Issuer {
	for _, i := range v.issuers {
		if i != nil && i.Issuer != "" && i.Issuer == name {
			return i
		}
	}
	return nil
}

// checkClaims holds a verified token's registered claims to astra's rules:
// the issuer's audience, a bounded life (exp, iat, max_lifetime) and a jti
// to accept it once by.
func checkClaims(std *jwt.Claims, iss *model.Issuer, now time.Time) error {
	if std.Expiry == nil {
		return fmt.Errorf("token of %s has no exp: astra accepts only tokens that expire", iss.Issuer)
	}
	err := std.ValidateWithLeeway(jwt.Expected{Issuer: iss.Issuer, AnyAudience: jwt.Audience{iss.Audience}, Time: now}, Skew)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return fmt.Errorf("token expired at %s (now %s)", stamp(std.Expiry.Time()), stamp(now))
	case errors.Is(err, jwt.ErrNotValidYet):
		return fmt.Errorf("token is not valid before %s (now %s)", stamp(std.NotBefore.Time()), stamp(now))
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return fmt.Errorf("token is issued in the future, at %s (now %s)", stamp(std.IssuedAt.Time()), stamp(now))
	case errors.Is(err, jwt.ErrInvalidAudience):
		return fmt.Errorf("token audience %v does not include %q, the audience configured for %s", []string(std.Audience), iss.Audience, iss.Issuer)
	case err != nil:
		return fmt.Errorf("token claims refused: %v", err)
	case std.IssuedAt == nil:
		return fmt.Errorf("token of %s has no iat: astra bounds how long a token lives from when it was issued", iss.Issuer)
	case std.ID == "":
		return fmt.Errorf("token of %s has no jti: astra accepts each token once, by its jti", iss.Issuer)
	}
	if life := std.Expiry.Time().Sub(std.IssuedAt.Time()); life > iss.Lifetime() {
		return fmt.Errorf("token of %s is valid for %s (exp − iat), longer than the %s its issuer's max_lifetime allows", iss.Issuer, span(life), span(iss.Lifetime()))
	}
	return nil
}

func (v *Verifier) verify(ctx context.Context, token string) (Identity, error) {
	tok, err := jwt.ParseSigned(strings.TrimSpace(token), signingAlgs)
	if err != nil {
		return Identity{}, fmt.Errorf("not a JWT astra accepts (compact form, signed with RS*, PS*, ES* or EdDSA): %v", err)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return Identity{}, fmt.Errorf("unreadable JWT claims: %v", err)
	}
	iss := v.issuer(unverified.Issuer)
	if iss == nil {
		return Identity{}, fmt.Errorf("token issuer %q is not configured under issuers: in policies", unverified.Issuer)
	}
	h := tok.Headers[0]
	if h.KeyID == "" {
		return Identity{}, fmt.Errorf("token of %s has no kid header to pick its key by", iss.Issuer)
	}
	key, err := v.key(ctx, iss, h.KeyID, h.Algorithm)
	if err != nil {
		return Identity{}, err
	}
	var std jwt.Claims
	claims := map[string]any{}
	if err := tok.Claims(key, &std, &claims); err != nil {
		return Identity{}, fmt.Errorf("token signature does not verify with key %s of %s", h.KeyID, iss.Issuer)
	}
	if err := checkClaims(&std, iss, v.now()); err != nil {
		return Identity{}, err
	}
	for _, m := range iss.Actors {
		if m != nil && claimsMatch(m.Claims, claims) {
			sum := sha256.Sum256([]byte(iss.Issuer + "\n" + std.ID))
			return Identity{Login: std.Subject, Source: SourceJWT, Verified: true, Actor: m.Actor, Claims: claims,
				TokenID: "jwt:" + hex.EncodeToString(sum[:12]), TokenExpires: std.Expiry.Time().UTC()}, nil
		}
	}
	return Identity{}, fmt.Errorf("token of %s for sub %q matches none of the issuer's actors in policies", iss.Issuer, std.Subject)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// span says a lifetime in words: days beyond two of them.
func span(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	return d.String()
}

// claimsMatch: every pattern matches its claim, which must be a string.
func claimsMatch(patterns map[string]string, claims map[string]any) bool {
	if len(patterns) == 0 {
		return false // validation refuses it; fail closed anyway
	}
	for name, p := range patterns {
		s, ok := claims[name].(string)
		if !ok || !model.Glob(p, s) {
			return false
		}
	}
	return true
}

// key finds the public key kid of iss, fetching the issuer's key set when
// it is not cached or does not have kid.
func (v *Verifier) key(ctx context.Context, iss *model.Issuer, kid string, alg string) (any, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if set := v.keys[iss.Issuer]; set != nil {
		if k := pick(set, kid, alg); k != nil {
			return k, nil
		}
	}
	set, err := v.fetch(ctx, iss)
	if err != nil {
		return nil, errkind.Infraf("cannot check the token: the keys of %s cannot be fetched: %w", iss.Issuer, err)
	}
	v.keys[iss.Issuer] = set
	if k := pick(set, kid, alg); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%s has no %s signing key %q (fetched its key set just now)", iss.Issuer, alg, kid)
}

// pick returns the public key of set with id kid that may verify alg.
func pick(set *jose.JSONWebKeySet, kid, alg string) any {
	for _, k := range set.Key(kid) {
		if (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) {
			continue
		}
		if pub := k.Public(); pub.Key != nil {
			return pub.Key
		}
	}
	return nil
}

// fetch reads iss's key set, from jwks_url or through OpenID discovery.
// Whatever fails here is the identity provider's side (or its URL in
// policies), never the caller's: Verify reports it as an outage.
func (v *Verifier) fetch(ctx context.Context, iss *model.Issuer) (*jose.JSONWebKeySet, error) {
	u := iss.JWKSURL
	if u == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := v.getJSON(ctx, strings.TrimSuffix(iss.Issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return nil, err
		}
		if doc.Issuer != iss.Issuer {
			return nil, fmt.Errorf("the discovery document of %s names issuer %q", iss.Issuer, doc.Issuer)
		}
		if doc.JWKSURI == "" {
			return nil, fmt.Errorf("the discovery document of %s has no jwks_uri", iss.Issuer)
		}
		u = doc.JWKSURI
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := v.getJSON(ctx, u, &raw); err != nil {
		return nil, err
	}
	set := &jose.JSONWebKeySet{}
	for _, r := range raw.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err == nil { // skip key types astra does not know
			set.Keys = append(set.Keys, k)
		}
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("the key set of %s at %s has no usable key", iss.Issuer, u)
	}
	return set, nil
}

func (v *Verifier) getJSON(ctx context.Context, u string, out any) error {
	if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
		return fmt.Errorf("refusing to fetch keys from %q: not an https URL", u)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return err // a *url.Error: it names the method and the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("fetch %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("fetch %s: larger than %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("read %s: %w", u, err)
	}
	return nil
}
