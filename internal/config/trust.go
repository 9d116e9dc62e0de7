package config

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/seal"
)

// addTrust merges one file's trust: section (defined once) and
// signing_keys: (each login once).
func (m *merger) addTrust(rel string, doc *yaml.Node, p *model.Policies) {
	keys := m.p.Meta.Keys
	if pos := p.Trust.Meta.Pos; pos.File != "" {
		if prev, ok := keys["trust"]; ok {
			m.diags.Errorf(pos, "keep one trust: section", "trust is already defined at %s", prev)
		} else {
			keys["trust"] = pos
			m.p.Trust = p.Trust
		}
	}
	for _, login := range sortedKeys(p.SigningKeys) {
		pos, k := diag.Pos{File: rel}, "signing_keys."+strings.ToLower(login)
		if n := lookup(doc, "signing_keys", login); n != nil {
			pos.Line, pos.Col = n.Line, n.Column
		}
		if prev, ok := keys[k]; ok {
			m.diags.Errorf(pos, "list each person's keys in one place", "signing keys of %q are already listed at %s", login, prev)
			continue
		}
		keys[k] = pos
		if m.p.SigningKeys == nil {
			m.p.SigningKeys = map[string][]string{}
		}
		m.p.SigningKeys[login] = p.SigningKeys[login]
	}
}

// validateTrust checks that every key parses and that signing keys belong
// to logins a role lists.
func validateTrust(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	for _, k := range p.Trust.LedgerKeys {
		if _, err := seal.ParsePublicKey(k); err != nil {
			diags.Errorf(p.Trust.Meta.At("ledger_keys"), "paste the .pub line `astra init` or `ssh-keygen -t ed25519` wrote", "trust.ledger_keys: %v", err)
		}
	}
	if e := p.Trust.Environment; e != "" && (strings.ContainsAny(e, "/\\\x00") || len(e) > 255) {
		diags.Errorf(p.Trust.Meta.At("environment"), "use the name of a GitHub environment", "trust.environment %q is not an environment name", e)
	}
	var listed []string
	for _, who := range p.Roles {
		listed = append(listed, who...)
	}
	owners := map[string]string{} // key fingerprint -> the login listing it first
	for _, login := range sortedKeys(p.SigningKeys) {
		pos := p.Meta.At("signing_keys." + strings.ToLower(login))
		if strings.HasPrefix(login, "@") || !loginRe.MatchString(login) {
			diags.Errorf(pos, "keys belong to one person: a GitHub login", "signing_keys: %q is not a GitHub login", login)
			continue
		}
		if len(p.SigningKeys[login]) == 0 {
			diags.Errorf(pos, "list the person's SSH public keys, or remove the entry", "signing_keys: %s lists no key", login)
		}
		for _, k := range p.SigningKeys[login] {
			pub, err := seal.ParsePublicKey(k)
			if err != nil {
				diags.Errorf(pos, "paste the line of the person's .pub file", "signing_keys of %s: %v", login, err)
				continue
			}
			fp := pub.Fingerprint()
			if other, ok := owners[fp]; ok && !strings.EqualFold(other, login) {
				diags.Errorf(pos, "a signing key is one person's: each approver lists their own", "signing_keys: %s lists the key %s that %s lists too", login, fp, other)
				continue
			}
			owners[fp] = login
		}
		if !slices.ContainsFunc(listed, func(w string) bool { return strings.EqualFold(w, login) }) {
			diags.Warnf(pos, "add the login to a role, or remove its keys", "signing_keys: %s is in no role, so nothing it signs can count", login)
		}
	}
}
