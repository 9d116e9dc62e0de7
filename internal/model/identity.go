package model

import (
	"path"
	"strings"
	"time"
)

// Verbs are the human actions that permissions: governs.
const (
	VerbApprove         = "approve"
	VerbReject          = "reject"
	VerbResume          = "resume"
	VerbDeadLetterRetry = "dead_letter_retry"
	VerbMemoryPurge     = "memory_purge"
	VerbRun             = "run"
	VerbTrigger         = "trigger"
	VerbRollback        = "rollback"
	VerbInitForce       = "init_force"
	VerbCorrectClock    = "correct_clock"
	VerbTrustResume     = "trust_resume" // tier 2 again after a tampered ledger was restored
	VerbMigrate         = "migrate"      // move the ledger to another branch
	VerbBackfill        = "backfill"     // run a schedule's past slots (astra backfill)
	VerbPause           = "pause"        // stop every run, and start them again (astra pause/resume --all)
	VerbCancel          = "cancel"       // withdraw a pending retry or approval request (astra cancel)
)

// Verbs lists every verb, in the order the documentation gives them.
var Verbs = []string{VerbApprove, VerbReject, VerbResume, VerbDeadLetterRetry, VerbMemoryPurge,
	VerbRun, VerbTrigger, VerbRollback, VerbInitForce, VerbCorrectClock, VerbTrustResume, VerbMigrate, VerbBackfill, VerbPause, VerbCancel}

// Issuer is an OIDC issuer whose JWTs may call astra (astra trigger --jwt).
type Issuer struct {
	Meta     Meta           `yaml:"-" json:"-"`
	Issuer   string         `yaml:"issuer" json:"issuer" required:"true" doc:"The iss claim, exactly, e.g. https://token.actions.githubusercontent.com."`
	JWKSURL  string         `yaml:"jwks_url" json:"jwks_url,omitempty" doc:"Where the signing keys are (default: jwks_uri of <issuer>/.well-known/openid-configuration)."`
	Audience string         `yaml:"audience" json:"audience" required:"true" doc:"The aud value tokens must carry for astra."`
	Actors   []*ClaimsActor `yaml:"actors" json:"actors" required:"true" doc:"Claim patterns to the actor a caller acts as; the first match wins."`
	// MaxLifetime bounds exp − iat of the issuer's tokens.
	MaxLifetime Duration `yaml:"max_lifetime" json:"max_lifetime,omitempty" doc:"Longest a token may be valid for, exp − iat (default 1h, at most 24h): a token valid for longer is refused."`
}

// Token lifetimes of issuers (Issuer.MaxLifetime).
const (
	DefaultTokenLifetime = time.Hour
	MaxTokenLifetime     = 24 * time.Hour
)

// Lifetime is the longest an issuer's token may be valid for.
func (i *Issuer) Lifetime() time.Duration {
	if i.MaxLifetime <= 0 {
		return DefaultTokenLifetime
	}
	return min(i.MaxLifetime.D(), MaxTokenLifetime)
}

// ClaimsActor maps tokens whose claims match every pattern to an actor.
type ClaimsActor struct {
	Meta   Meta              `yaml:"-" json:"-"`
	Claims map[string]string `yaml:"claims" json:"claims" required:"true" doc:"Claim name to a glob on its string value (* within a path segment, ** across)."`
	Actor  string            `yaml:"actor" json:"actor" required:"true" doc:"Actor id the caller acts as (defined under actors:)."`
}

// UsableIn reports whether a schedule in file (a slash path relative to the
// repository root) may use this actor: any file when allowed_in is empty.
func (a *Actor) UsableIn(file string) bool {
	if len(a.AllowedIn) == 0 {
		return true
	}
	for _, p := range a.AllowedIn {
		if Glob(p, file) {
			return true
		}
	}
	return false
}

// Glob matches name against pattern segment by segment (segments split at
// "/"), each with path.Match; a "**" segment matches any number of segments,
// none included. A malformed pattern matches nothing.
func Glob(pattern, name string) bool {
	return globSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func globSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := len(name); i >= 0; i-- {
				if globSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// ValidGlob reports whether every segment of pattern is well-formed.
func ValidGlob(pattern string) bool {
	for _, seg := range strings.Split(pattern, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return false
		}
	}
	return true
}

// RolesFor lists the roles that may perform verb. taskRole is the
// approver_role of the task policy of the schedule concerned ("" when none
// or when the verb concerns no schedule). approve takes taskRole when set,
// else permissions.approve; any other verb takes its own permissions entry,
// else what approve would take. An entry written as [] means nobody.
func (pol *Policies) RolesFor(verb, taskRole string) []string {
	if verb != VerbApprove {
		if roles, ok := pol.Permissions[verb]; ok {
			return roles
		}
	}
	if taskRole != "" {
		return []string{taskRole}
	}
	return pol.Permissions[VerbApprove]
}
