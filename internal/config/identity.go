package config

import (
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/astra-gitops/astra/internal/diag"
	"github.com/astra-gitops/astra/internal/model"
)

// addIdentity merges one file's roles (and approvers, their older name),
// permissions, identities and issuers, refusing an entry already defined in
// another place. Merged positions go to Policies.Meta.Keys.
func (m *merger) addIdentity(rel string, doc *yaml.Node, p *model.Policies) {
	at := func(section, name string) diag.Pos {
		if n := lookup(doc, section, name); n != nil {
			return diag.Pos{File: rel, Line: n.Line, Col: n.Column}
		}
		return diag.Pos{File: rel}
	}
	keys := m.p.Meta.Keys
	for _, section := range []string{"approvers", "roles"} {
		roles := p.Roles
		if section == "approvers" {
			roles = p.Approvers
		}
		for _, role := range sortedKeys(roles) {
			pos, who := at(section, role), roles[role]
			if prev, ok := m.roleAt[role]; ok {
				m.diags.Errorf(pos, "define each role once; approvers: is the older name of roles:", "role %q is already defined at %s", role, prev)
				continue
			}
			m.roleAt[role], keys["roles."+role] = pos, pos
			m.p.Roles[role] = who
			if len(who) == 0 {
				m.diags.Errorf(pos, "list GitHub logins or @org/team slugs", "role %q lists nobody", role)
			}
			for _, w := range who {
				if !loginRe.MatchString(w) {
					m.diags.Errorf(pos, "use a GitHub login or @org/team", "%q in role %q is not a GitHub login or team", w, role)
				}
			}
		}
	}
	for _, verb := range sortedKeys(p.Permissions) {
		pos, k := at("permissions", verb), "permissions."+verb
		if prev, ok := keys[k]; ok {
			m.diags.Errorf(pos, "list every role of a verb in one place", "permission %q is already defined at %s", verb, prev)
			continue
		}
		keys[k] = pos
		if m.p.Permissions == nil {
			m.p.Permissions = map[string][]string{}
		}
		m.p.Permissions[verb] = p.Permissions[verb]
	}
	for _, email := range sortedKeys(p.Identities) {
		pos, k := at("identities", email), "identities."+strings.ToLower(email)
		if prev, ok := keys[k]; ok {
			m.diags.Errorf(pos, "map each email once", "identity %q is already mapped at %s", email, prev)
			continue
		}
		keys[k] = pos
		if m.p.Identities == nil {
			m.p.Identities = map[string]string{}
		}
		m.p.Identities[email] = p.Identities[email]
	}
	for _, iss := range p.Issuers {
		if iss == nil {
			continue
		}
		k := "issuers." + iss.Issuer
		if prev, ok := keys[k]; ok && iss.Issuer != "" {
			m.diags.Errorf(iss.Meta.At("issuer"), "merge the two entries", "issuer %q is already defined at %s", iss.Issuer, prev)
			continue
		}
		keys[k] = iss.Meta.At("issuer")
		m.p.Issuers = append(m.p.Issuers, iss)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// validateIdentity checks permissions, identities, issuers and where each
// actor may be used, once every policy file is merged.
func validateIdentity(cfg *model.Config, diags *diag.List) {
	p := &cfg.Policies
	roles := sortedKeys(p.Roles)
	for _, verb := range sortedKeys(p.Permissions) {
		pos := p.Meta.At("permissions." + verb)
		if !slices.Contains(model.Verbs, verb) {
			diags.Errorf(pos, suggest(verb, model.Verbs, "verbs"), "unknown verb %q in permissions", verb)
		}
		allowed := p.Permissions[verb]
		if len(allowed) == 0 {
			diags.Warnf(pos, "list roles, or remove the entry to use approve's roles", "nobody may %s", verb)
		}
		for _, r := range allowed {
			if _, ok := p.Roles[r]; !ok {
				hint := "define it under roles:"
				if s := suggest(r, roles, "roles"); strings.HasPrefix(s, "did you mean") {
					hint = s
				}
				diags.Errorf(pos, hint, "permission %s names role %q, which is not defined", verb, r)
			}
		}
	}
	for _, email := range sortedKeys(p.Identities) {
		pos, login := p.Meta.At("identities."+strings.ToLower(email)), p.Identities[email]
		if strings.Count(email, "@") != 1 || strings.ContainsAny(email, " \t") {
			diags.Errorf(pos, "keys are git config user.email values", "%q is not an email address", email)
		}
		if strings.HasPrefix(login, "@") || !loginRe.MatchString(login) {
			diags.Errorf(pos, "map an email to one GitHub login, not a team", "%q is not a GitHub login", login)
		}
	}
	for _, iss := range p.Issuers {
		validateIssuer(p, iss, diags)
	}
	for _, a := range p.Actors {
		for _, g := range a.AllowedIn {
			first, _, _ := strings.Cut(g, "/")
			matchesSchedules, _ := path.Match(first, SchedulesDir)
			switch {
			case !model.ValidGlob(g) || path.IsAbs(g) || path.Clean(g) != g:
				diags.Errorf(a.Meta.At("allowed_in"), "write repository paths such as schedules/ops/**", "invalid allowed_in pattern %q", g)
			case first != "**" && !matchesSchedules:
				diags.Errorf(a.Meta.At("allowed_in"), "schedule files are under schedules/", "allowed_in pattern %q matches no schedule file", g)
			}
		}
	}
	for _, s := range cfg.Schedules {
		if a := p.Actor(s.Actor); a != nil && !a.UsableIn(s.Meta.Pos.File) {
			diags.Errorf(s.Meta.At("actor"), "move the schedule there, or use another actor",
				"actor %s may only be used in %s; this schedule is in %s", s.Actor, strings.Join(a.AllowedIn, ", "), s.Meta.Pos.File)
		}
	}
}

// githubIssuer is GitHub Actions' OIDC issuer; it signs tokens for every
// repository on GitHub, so a mapping must pin the repository owner.
const githubIssuer = "https://token.actions.githubusercontent.com"

func validateIssuer(p *model.Policies, iss *model.Issuer, diags *diag.List) {
	m := iss.Meta
	httpsURL := func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.Scheme == "https" && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
	}
	if !httpsURL(iss.Issuer) {
		diags.Errorf(m.At("issuer"), "OIDC issuers are https URLs, written exactly as the iss claim", "issuer %q is not an https URL", iss.Issuer)
	}
	if iss.JWKSURL != "" && !httpsURL(iss.JWKSURL) {
		diags.Errorf(m.At("jwks_url"), "", "jwks_url %q is not an https URL", iss.JWKSURL)
	}
	if iss.Audience == "" {
		diags.Errorf(m.Pos, "add `audience: <the aud callers request>`, e.g. astra", "issuer %q has no audience", iss.Issuer)
	}
	if len(iss.Actors) == 0 {
		diags.Errorf(m.Pos, "add actors: [{claims: {...}, actor: ...}]", "issuer %q maps no caller to an actor", iss.Issuer)
	}
	if m.Has("max_lifetime") && (iss.MaxLifetime <= 0 || iss.MaxLifetime.D() > model.MaxTokenLifetime) {
		diags.Errorf(m.At("max_lifetime"), "a short-lived token is one a leak costs little: use 1h, or at most 24h",
			"issuer %q: max_lifetime %s is not between 1s and %s", iss.Issuer, iss.MaxLifetime.D(), model.MaxTokenLifetime)
	}
	for _, ca := range iss.Actors {
		if ca == nil {
			continue
		}
		switch {
		case ca.Actor == "":
			diags.Errorf(ca.Meta.Pos, "add `actor: <id>`", "issuer mapping has no actor")
		case p.Actor(ca.Actor) == nil:
			diags.Errorf(ca.Meta.At("actor"), "add it under actors:", "actor %q matches no actor in policies", ca.Actor)
		}
		if len(ca.Claims) == 0 {
			diags.Errorf(ca.Meta.Pos, "add claims: {sub: ...}", "a mapping without claims would accept every token of %s", iss.Issuer)
			continue
		}
		for _, c := range sortedKeys(ca.Claims) {
			if !model.ValidGlob(ca.Claims[c]) {
				diags.Errorf(ca.Meta.At("claims"), "", "invalid pattern %q for claim %s", ca.Claims[c], c)
			}
		}
		if strings.HasPrefix(iss.Issuer, githubIssuer) && !pinsOwner(ca.Claims) {
			diags.Errorf(ca.Meta.At("claims"), "add e.g. repository: my-org/* or repository_owner: my-org",
				"GitHub signs tokens for every repository: this mapping must name the repository owner")
		}
	}
}

// pinsOwner reports whether GitHub Actions claims patterns fix the
// repository owner literally.
func pinsOwner(claims map[string]string) bool {
	literal := func(s string) bool { return s != "" && !strings.ContainsAny(s, `*?[\`) }
	for k, v := range claims {
		switch k {
		case "repository_owner", "repository_owner_id", "repository_id":
			if literal(v) {
				return true
			}
		case "repository", "job_workflow_ref":
			if owner, _, ok := strings.Cut(v, "/"); ok && literal(owner) {
				return true
			}
		case "sub":
			rest, ok := strings.CutPrefix(v, "repo:")
			if owner, _, ok2 := strings.Cut(rest, "/"); ok && ok2 && literal(owner) {
				return true
			}
		}
	}
	return false
}
