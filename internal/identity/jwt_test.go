package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

var (
	keysOnce            sync.Once
	rsaKey, rogueRSAKey *rsa.PrivateKey
	ecKey               *ecdsa.PrivateKey
)

func testKeys(t *testing.T) {
	keysOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if rogueRSAKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
		if ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	})
}

// idp is an OIDC issuer on a local TLS server: a discovery document and a
// key set that a test may change, counting the fetches of each.
type idp struct {
	srv             *httptest.Server
	mu              sync.Mutex
	keys            []jose.JSONWebKey
	discovery, jwks atomic.Int32
}

func newIDP(t *testing.T, keys ...jose.JSONWebKey) *idp {
	p := &idp{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		p.discovery.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		p.jwks.Add(1)
		p.mu.Lock()
		set := map[string]any{"keys": append([]any{map[string]string{"kty": "future-type", "kid": "x"}}, anySlice(p.keys)...)}
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	p.srv = httptest.NewTLSServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func anySlice(keys []jose.JSONWebKey) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

func (p *idp) setKeys(keys ...jose.JSONWebKey) {
	p.mu.Lock()
	p.keys = keys
	p.mu.Unlock()
}

func publicJWK(key any, kid, alg string) jose.JSONWebKey {
	k := jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: alg, Use: "sig"}
	return k.Public()
}

func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims ...any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(signer)
	for _, c := range claims {
		b = b.Claims(c)
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var jwtNow = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// jtis numbers the tokens the tests sign.
var jtis atomic.Int64

func setupJWT(t *testing.T) (*idp, *model.Issuer, *Verifier) {
	testKeys(t)
	p := newIDP(t, publicJWK(&rsaKey.PublicKey, "rsa1", "RS256"), publicJWK(&ecKey.PublicKey, "ec1", "ES256"))
	iss := &model.Issuer{Issuer: p.srv.URL, Audience: "astra", Actors: []*model.ClaimsActor{
		{Claims: map[string]string{"repository": "octo/*", "ref": "refs/heads/main"}, Actor: "ci_main"},
		{Claims: map[string]string{"repository": "octo/*"}, Actor: "ci_other"},
	}}
	return p, iss, NewVerifier([]*model.Issuer{iss}, p.srv.Client(), func() time.Time { return jwtNow })
}

// claims are GitHub Actions-like claims of a token valid around jwtNow.
func claims(iss string, mod func(*jwt.Claims, map[string]any)) (jwt.Claims, map[string]any) {
	std := jwt.Claims{Issuer: iss, Subject: "repo:octo/widgets:ref:refs/heads/main", Audience: jwt.Audience{"astra"},
		IssuedAt: jwt.NewNumericDate(jwtNow.Add(-time.Minute)), NotBefore: jwt.NewNumericDate(jwtNow.Add(-time.Minute)),
		Expiry: jwt.NewNumericDate(jwtNow.Add(5 * time.Minute)), ID: "jti-" + strconv.Itoa(int(jtis.Add(1)))}
	extra := map[string]any{"repository": "octo/widgets", "ref": "refs/heads/main", "repository_id": "123"}
	if mod != nil {
		mod(&std, extra)
	}
	return std, extra
}

func TestVerifyJWT(t *testing.T) {
	p, iss, v := setupJWT(t)
	ctx := context.Background()

	std, extra := claims(iss.Issuer, nil)
	id, err := v.Verify(ctx, sign(t, jose.RS256, rsaKey, "rsa1", std, extra))
	if err != nil {
		t.Fatal(err)
	}
	if id.Login != "repo:octo/widgets:ref:refs/heads/main" || id.Actor != "ci_main" || id.Source != SourceJWT || !id.Verified || id.Claims["repository_id"] != "123" {
		t.Errorf("identity = %+v", id)
	}
	if !strings.HasPrefix(id.TokenID, "jwt:") || strings.Contains(id.TokenID, std.ID) || !id.TokenExpires.Equal(std.Expiry.Time()) {
		t.Errorf("token id %q, expires %s", id.TokenID, id.TokenExpires)
	}
	if p.discovery.Load() != 1 || p.jwks.Load() != 1 {
		t.Errorf("fetches: discovery %d, keys %d", p.discovery.Load(), p.jwks.Load())
	}

	// An EC key of the same set, from the cache; a later mapping entry.
	std, extra = claims(iss.Issuer, func(_ *jwt.Claims, m map[string]any) { m["ref"] = "refs/heads/dev" })
	id, err = v.Verify(ctx, sign(t, jose.ES256, ecKey, "ec1", std, extra))
	if err != nil || id.Actor != "ci_other" {
		t.Fatalf("EC token: %+v, %v", id, err)
	}
	if p.discovery.Load() != 1 || p.jwks.Load() != 1 {
		t.Errorf("keys not cached: discovery %d, keys %d", p.discovery.Load(), p.jwks.Load())
	}

	// Within the 60 s skew.
	std, extra = claims(iss.Issuer, func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(jwtNow.Add(-59 * time.Second)) })
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rsaKey, "rsa1", std, extra)); err != nil {
		t.Errorf("expired 59 s ago, within the skew: %v", err)
	}
}

func TestVerifyJWTRefuses(t *testing.T) {
	_, iss, v := setupJWT(t)
	ctx := context.Background()
	valid := func(mod func(*jwt.Claims, map[string]any)) string {
		std, extra := claims(iss.Issuer, mod)
		return sign(t, jose.RS256, rsaKey, "rsa1", std, extra)
	}
	good := valid(nil)
	parts := strings.Split(good, ".")
	std, extra := claims(iss.Issuer, nil)
	body, _ := json.Marshal(map[string]any{"iss": std.Issuer, "sub": std.Subject, "aud": "astra", "exp": std.Expiry, "repository": "octo/evil"})
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})

	for _, c := range []struct {
		name, token, err string
	}{
		{"expired", valid(func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(jwtNow.Add(-61 * time.Second)) }),
			"token expired at 2026-11-23T08:58:59Z (now 2026-11-23T09:00:00Z)"},
		{"not yet valid", valid(func(c *jwt.Claims, _ map[string]any) { c.NotBefore = jwt.NewNumericDate(jwtNow.Add(2 * time.Minute)) }),
			"token is not valid before 2026-11-23T09:02:00Z"},
		{"issued in the future", valid(func(c *jwt.Claims, _ map[string]any) { c.IssuedAt = jwt.NewNumericDate(jwtNow.Add(2 * time.Minute)) }),
			"token is issued in the future"},
		{"no exp", valid(func(c *jwt.Claims, _ map[string]any) { c.Expiry = nil }), "has no exp"},
		{"no iat", valid(func(c *jwt.Claims, _ map[string]any) { c.IssuedAt = nil }), "has no iat"},
		{"no jti", valid(func(c *jwt.Claims, _ map[string]any) { c.ID = "" }), "has no jti: astra accepts each token once"},
		{"ten years", valid(func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(jwtNow.AddDate(10, 0, 0)) }),
			"is valid for 3653 days (exp − iat), longer than the 1h0m0s its issuer's max_lifetime allows"},
		{"wrong audience", valid(func(c *jwt.Claims, _ map[string]any) { c.Audience = jwt.Audience{"sts.amazonaws.com"} }),
			`token audience [sts.amazonaws.com] does not include "astra"`},
		{"wrong issuer", valid(func(c *jwt.Claims, _ map[string]any) { c.Issuer = "https://evil.example.com" }),
			`token issuer "https://evil.example.com" is not configured`},
		{"no mapping", valid(func(_ *jwt.Claims, m map[string]any) { m["repository"] = "other/widgets" }),
			`for sub "repo:octo/widgets:ref:refs/heads/main" matches none of the issuer's actors`},
		{"claim not a string", valid(func(_ *jwt.Claims, m map[string]any) { m["repository"] = []string{"octo/widgets"} }), "matches none"},
		{"unknown key", sign(t, jose.RS256, rogueRSAKey, "rogue", std, extra), `has no RS256 signing key "rogue"`},
		{"wrong key under a known kid", sign(t, jose.RS256, rogueRSAKey, "rsa1", std, extra), "signature does not verify with key rsa1"},
		{"alg of another key type", sign(t, jose.ES256, ecKey, "rsa1", std, extra), `has no ES256 signing key "rsa1"`},
		{"no kid", sign(t, jose.RS256, rsaKey, "", std, extra), "has no kid header"},
		{"alg none", none, "not a JWT astra accepts"},
		{"HS256 keyed with the public key", sign(t, jose.HS256, pubPEM, "rsa1", std, extra), "not a JWT astra accepts"},
		{"tampered payload", tampered, "signature does not verify"},
		{"garbage", "not.a.jwt", "not a JWT astra accepts"},
	} {
		id, err := v.Verify(ctx, c.token)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
		if !errors.Is(err, errkind.ErrRefused) || errors.Is(err, errkind.ErrInfra) {
			t.Errorf("%s: %v is not a refusal (kind %v)", c.name, err, errkind.Of(err))
		}
		if id.Login != "" || id.Actor != "" {
			t.Errorf("%s: identity %+v returned with the error", c.name, id)
		}
		if err != nil && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error quotes the token", c.name)
		}
	}
}

// TestJWTKeyRotation: a kid not in the cached set fetches the set again,
// once; a fixed jwks_url skips discovery.
func TestJWTKeyRotation(t *testing.T) {
	p, iss, v := setupJWT(t)
	ctx := context.Background()
	std, extra := claims(iss.Issuer, nil)
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rsaKey, "rsa1", std, extra)); err != nil {
		t.Fatal(err)
	}
	p.setKeys(publicJWK(&rogueRSAKey.PublicKey, "rsa2", "RS256"))
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rogueRSAKey, "rsa2", std, extra)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if got := p.jwks.Load(); got != 2 {
		t.Errorf("key set fetched %d times, want 2", got)
	}
	// The old key left the set; the cache now holds the new set only.
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rsaKey, "rsa1", std, extra)); err == nil {
		t.Error("a key that left the set still verifies")
	}
	if got := p.jwks.Load(); got != 3 {
		t.Errorf("an unknown kid fetches once: %d fetches, want 3", got)
	}

	fixed := *iss
	fixed.JWKSURL = p.srv.URL + "/keys"
	v = NewVerifier([]*model.Issuer{&fixed}, p.srv.Client(), func() time.Time { return jwtNow })
	before := p.discovery.Load()
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rogueRSAKey, "rsa2", std, extra)); err != nil || p.discovery.Load() != before {
		t.Errorf("jwks_url: %v, discovery fetched %d times", err, p.discovery.Load()-before)
	}
}

// TestJWTKeyFetchFailures: keys that cannot be fetched, from a URL
// policies name or from an issuer that answers wrongly, leave the token
// unchecked: an outage, never a refusal of its caller.
func TestJWTKeyFetchFailures(t *testing.T) {
	p, iss, _ := setupJWT(t)
	ctx := context.Background()
	std, extra := claims(iss.Issuer, nil)
	token := sign(t, jose.RS256, rsaKey, "rsa1", std, extra)
	for _, c := range []struct {
		name   string
		jwks   string
		client *http.Client
		err    string
	}{
		{"plain http key set", "http://" + strings.TrimPrefix(p.srv.URL, "https://") + "/keys", p.srv.Client(), "not an https URL"},
		{"missing key set", p.srv.URL + "/nothing", p.srv.Client(), "404 Not Found"},
		{"untrusted certificate", "", http.DefaultClient, "certificate"},
	} {
		i := *iss
		i.JWKSURL = c.jwks
		v := NewVerifier([]*model.Issuer{&i}, c.client, func() time.Time { return jwtNow })
		_, err := v.Verify(ctx, token)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
		}
		if !errors.Is(err, errkind.ErrInfra) || errors.Is(err, errkind.ErrRefused) {
			t.Errorf("%s: %v is not an outage (kind %v)", c.name, err, errkind.Of(err))
		}
	}
	// A discovery document must name the issuer it was fetched for.
	other := newIDP(t, publicJWK(&rsaKey.PublicKey, "rsa1", "RS256"))
	i := *iss
	i.Issuer = other.srv.URL + "/"
	std.Issuer = i.Issuer
	v := NewVerifier([]*model.Issuer{&i}, other.srv.Client(), func() time.Time { return jwtNow })
	if _, err := v.Verify(ctx, sign(t, jose.RS256, rsaKey, "rsa1", std, extra)); err == nil || !strings.Contains(err.Error(), "names issuer") || !errors.Is(err, errkind.ErrInfra) {
		t.Errorf("issuer mismatch in discovery: %v", err)
	}
}

// TestJWTProviderOutage: an identity provider that is down, failing or
// too slow is an outage (errkind.ErrInfra, exit 3, retried): the token
// was never checked, so its caller is not refused.
func TestJWTProviderOutage(t *testing.T) {
	testKeys(t)
	failing := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down for maintenance", status) }
	}
	// A server that never answers; when the client gives up, the
	// connection is dropped rather than answered (an empty 200 racing the
	// client's timeout on a loaded machine would be read as bad JSON).
	hanging := func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	}
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "https://" + addr
	}
	for _, c := range []struct {
		name      string
		handler   http.HandlerFunc // serves both discovery and keys; nil: nothing listens
		discovery bool             // the keys come through discovery, not jwks_url
		err       string           // what the message names; "" for a timeout, whose wording depends on when the client gave up
	}{
		{"key set answers 503", failing(http.StatusServiceUnavailable), false, "503 Service Unavailable"},
		{"discovery answers 503", failing(http.StatusServiceUnavailable), true, "503 Service Unavailable"},
		{"key set answers 500", failing(http.StatusInternalServerError), false, "500 Internal Server Error"},
		{"key set times out", hanging, false, ""},
		{"discovery times out", hanging, true, ""},
		{"nothing listens", nil, false, "connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, client := closed(), &http.Client{Timeout: 200 * time.Millisecond}
			if c.handler != nil {
				srv := httptest.NewTLSServer(c.handler)
				t.Cleanup(srv.Close)
				base, client = srv.URL, srv.Client()
				client.Timeout = 200 * time.Millisecond
			}
			iss := &model.Issuer{Issuer: base, Audience: "astra", Actors: []*model.ClaimsActor{{Claims: map[string]string{"repository": "octo/*"}, Actor: "ci"}}}
			if !c.discovery {
				iss.JWKSURL = base + "/keys"
			}
			std, extra := claims(iss.Issuer, nil)
			v := NewVerifier([]*model.Issuer{iss}, client, func() time.Time { return jwtNow })
			id, err := v.Verify(context.Background(), sign(t, jose.RS256, rsaKey, "rsa1", std, extra))
			if !errors.Is(err, errkind.ErrInfra) || errors.Is(err, errkind.ErrRefused) {
				t.Fatalf("Verify = %v (kind %v), want an outage, not a refusal", err, errkind.Of(err))
			}
			if !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "cannot be fetched") {
				t.Errorf("error %q does not say %q and what could not be fetched", err, c.err)
			}
			if id.Login != "" || id.Verified {
				t.Errorf("identity %+v returned with an outage", id)
			}
		})
	}
}
