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
	m.addRoles("approvers", p.Approvers, at)
	m.addRoles("roles", p.Roles, at)
	m.addPermissions(p.Permissions, at)
	m.addIdentities(p.Identities, at)
	m.addIssuers(p.Issuers)
}

// addRoles merges the roles of one section (roles, or approvers), checking
// their members; at is where a section's entry is.
func (m *merger) addRoles(section string, roles map[string][]string, at func(section, name string) diag.Pos) {
	for _, role := range sortedKeys(roles) {
		pos, who := at(section, role), roles[role]
		if prev, ok := m.roleAt[role]; ok {
			m.diags.Errorf(pos, "define each role once; approvers: is the older name of roles:", "role %q is already defined at %s", role, prev)
			continue
		}
		m.roleAt[role], m.p.Meta.Keys["roles."+role] = pos, pos
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

func (m *merger) addPermissions(perms map[string][]string, at func(section, name string) diag.Pos) {
	keys := m.p.Meta.Keys
	for _, verb := range sortedKeys(perms) {
		pos, k := at("permissions", verb), "permissions."+verb
		if prev, ok := keys[k]; ok {
			m.diags.Errorf(pos, "list every role of a verb in one place", "permission %q is already defined at %s", verb, prev)
			continue
		}
		keys[k] = pos
		if m.p.Permissions == nil {
			m.p.Permissions = map[string][]string{}
		}
		m.p.Permissions[verb] = perms[verb]
	}
}

// addIdentities merges email → login mappings; emails compare without
// case.
func (m *merger) addIdentities(ids map[string]string, at func(section, name string) diag.Pos) {
	keys := m.p.Meta.Keys
	for _, email := range sortedKeys(ids) {
		pos, k := at("identities", email), "identities."+strings.ToLower(email)
		if prev, ok := keys[k]; ok {
			m.diags.Errorf(pos, "map each email once", "identity %q is already mapped at %s", email, prev)
			continue
		}
		keys[k] = pos
		if m.p.Identities == nil {
			m.p.Identities = map[string]string{}
		}
		m.p.Identities[email] = ids[email]
	}
}

func (m *merger) addIssuers(issuers []*model.Issuer) {
	keys := m.p.Meta.Keys
	for _, iss := range issuers {
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
	validatePermissions(p, diags)
	validateIdentities(p, diags)
	for _, iss := range p.Issuers {
		validateIssuer(p, iss, diags)
	}
	for _, a := range p.Actors {
		validateAllowedIn(a, diags)
	}
	for _, s := range cfg.Schedules {
		if a := p.Actor(s.Actor); a != nil && !a.UsableIn(s.Meta.Pos.File) {
			diags.Errorf(s.Meta.At("actor"), "move the schedule there, or use another actor",
				"actor %s may only be used in %s; this schedule is in %s", s.Actor, strings.Join(a.AllowedIn, ", "), s.Meta.Pos.File)
		}
	}
}

// validatePermissions checks that each verb is known and names defined
// roles.
func validatePermissions(p *model.Policies, diags *diag.List) {
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
}

// validateIdentities checks that each identity maps an email to one
// GitHub login.
func validateIdentities(p *model.Policies, diags *diag.List) {
	for _, email := range sortedKeys(p.Identities) {
		pos, login := p.Meta.At("identities."+strings.ToLower(email)), p.Identities[email]
		if strings.Count(email, "@") != 1 || strings.ContainsAny(email, " \t") {
			diags.Errorf(pos, "keys are git config user.email values", "%q is not an email address", email)
		}
		if strings.HasPrefix(login, "@") || !loginRe.MatchString(login) {
			diags.Errorf(pos, "map an email to one GitHub login, not a team", "%q is not a GitHub login", login)
		}
	}
}

// validateAllowedIn checks that an actor's allowed_in patterns are clean
// repository paths that can match a schedule file.
func validateAllowedIn(a *model.Actor, diags *diag.List) {
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

// githubIssuer is GitHub Actions' OIDC issuer; it signs tokens for every
// repository on GitHub, so a mapping must pin the repository owner.
const githubIssuer = "https://token.actions.githubusercontent.com"

// validateIssuer checks an OIDC issuer's URLs and audience, and each of
// its mappings from callers to actors.
func validateIssuer(p *model.Policies, iss *model.Issuer, diags *diag.List) {
	m := iss.Meta
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
		if ca != nil {
			validateClaimsActor(p, iss.Issuer, ca, diags)
		}
	}
}

// httpsURL reports whether s is an absolute https URL with no query or
// fragment.
func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// validateClaimsActor checks one mapping of issuer's tokens to an actor:
// the actor exists, the claims patterns are valid and, for GitHub's
// issuer, pin the repository owner.
func validateClaimsActor(p *model.Policies, issuer string, ca *model.ClaimsActor, diags *diag.List) {
	switch {
	case ca.Actor == "":
		diags.Errorf(ca.Meta.Pos, "add `actor: <id>`", "issuer mapping has no actor")
	case p.Actor(ca.Actor) == nil:
		diags.Errorf(ca.Meta.At("actor"), "add it under actors:", "actor %q matches no actor in policies", ca.Actor)
	}
	if len(ca.Claims) == 0 {
		diags.Errorf(ca.Meta.Pos, "add claims: {sub: ...}", "a mapping without claims would accept every token of %s", issuer)
		return
	}
	for _, c := range sortedKeys(ca.Claims) {
		if !model.ValidGlob(ca.Claims[c]) {
			diags.Errorf(ca.Meta.At("claims"), "", "invalid pattern %q for claim %s", ca.Claims[c], c)
		}
	}
	if strings.HasPrefix(issuer, githubIssuer) && !pinsOwner(ca.Claims) {
		diags.Errorf(ca.Meta.At("claims"), "add e.g. repository: my-org/* or repository_owner: my-org",
			"GitHub signs tokens for every repository: this mapping must name the repository owner")
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
