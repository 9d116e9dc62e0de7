package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/astra-gitops/astra/internal/seal"
)

func TestTrust(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlCGLzC5JL0v8Ot4yQ5H1CljGB0qSKbrWZi2G2n9gmt"
	_, other, err := seal.Generate("mallory")
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse([]byte(`-- policies/p.yaml --
tools:
  hook: {kind: http, url: "https://example.com/x", tier: 0}
actors:
  - actor: astra
    scopes: ["*"]
roles:
  founder: [octocat]
trust:
  ledger_keys: ["` + key + ` astra-ledger"]
-- policies/keys.yaml --
signing_keys:
  octocat: ["` + key + `"]
  mallory: ["` + other.String() + `"]
`))
	cfg, diags, err := Load(writeArchive(t, a))
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for _, d := range diags {
		if d.Severity == 0 {
			t.Errorf("unexpected error: %s", d)
		} else {
			warnings = append(warnings, d.String())
		}
	}
	if !slices.ContainsFunc(warnings, func(w string) bool {
		return strings.HasPrefix(w, "policies/keys.yaml:3:3: warning: signing_keys: mallory is in no role")
	}) {
		t.Errorf("warnings = %q", warnings)
	}
	p := cfg.Policies
	if !p.Trust.Keyed() || p.Trust.EnvironmentName() != "astra" || len(p.SigningKeys["octocat"]) != 1 {
		t.Errorf("trust %+v, signing keys %v", p.Trust, p.SigningKeys)
	}
}

// A signing key listed for two people is an error: whoever holds it could
// sign as either.
func TestSigningKeyListedTwice(t *testing.T) {
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFlCGLzC5JL0v8Ot4yQ5H1CljGB0qSKbrWZi2G2n9gmt"
	a := txtar.Parse([]byte(`-- policies/p.yaml --
tools:
  hook: {kind: http, url: "https://example.com/x", tier: 0}
actors:
  - {actor: astra, scopes: ["*"]}
roles:
  founder: [octocat, mallory]
signing_keys:
  octocat: ["` + key + `"]
  mallory: ["` + key + ` mallory@laptop"]
`))
	_, diags, err := Load(writeArchive(t, a))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, d := range diags {
		all = append(all, d.String())
	}
	text := strings.Join(all, "\n")
	if diags.Errors() != 1 || !strings.Contains(text, "signing_keys: octocat lists the key SHA256:") || !strings.Contains(text, "that mallory lists too") {
		t.Fatalf("diagnostics:\n%s", text)
	}
}
