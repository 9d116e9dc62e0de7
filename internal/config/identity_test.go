package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestIdentitySections: roles, approvers (their older name), permissions,
// identities and issuers merge across files; an actor bound to a path is
// usable there.
func TestIdentitySections(t *testing.T) {
	a := &txtar.Archive{Files: []txtar.File{
		{Name: "policies/a.yaml", Data: []byte(`tools:
  noop: {kind: exec, command: [echo], tier: read_only}
actors:
  - {actor: astra, scopes: ["*"]}
  - {actor: admin, scopes: ["*"], allowed_in: ["schedules/ops/**"]}
  - {actor: ci_caller, scopes: [local.*]}
approvers:
  founder: [octocat, "@my-org/founders"]
permissions:
  approve: [founder]
  rollback: []
`)},
		{Name: "policies/b.yaml", Data: []byte(`roles:
  ops: [alice]
permissions:
  trigger: [ops]
identities:
  alice@example.com: alice
issuers:
  - issuer: https://token.actions.githubusercontent.com
    audience: astra
    actors:
      - {claims: {repository: "my-org/*", ref: refs/heads/main}, actor: ci_caller}
`)},
		{Name: "schedules/ops/deep/x.yaml", Data: []byte("name: x\ncron: \"@daily\"\ntarget_tool: noop\nactor: admin\n")},
	}}
	cfg, diags, err := Load(writeArchive(t, a))
	if err != nil || diags.Errors() > 0 {
		t.Fatalf("load: %v %v", err, diags)
	}
	p := cfg.Policies
	if !slices.Equal(p.Roles["founder"], []string{"octocat", "@my-org/founders"}) || !slices.Equal(p.Roles["ops"], []string{"alice"}) {
		t.Errorf("roles = %v", p.Roles)
	}
	if len(p.Approvers) != len(p.Roles) {
		t.Errorf("approvers %v do not hold every role %v", p.Approvers, p.Roles)
	}
	if len(p.Permissions) != 3 || p.Permissions["trigger"][0] != "ops" {
		t.Errorf("permissions = %v", p.Permissions)
	}
	if p.Identities["alice@example.com"] != "alice" || len(p.Issuers) != 1 || p.Issuers[0].Actors[0].Actor != "ci_caller" {
		t.Errorf("identities %v, issuers %v", p.Identities, p.Issuers)
	}
	if got := p.Meta.At("permissions.trigger").String(); got != "policies/b.yaml:4:3" {
		t.Errorf("position of permissions.trigger = %s", got)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].String(), "policies/a.yaml:11:3: warning: nobody may rollback") {
		t.Errorf("diagnostics = %v", diags)
	}
}
