// Package identity says who is acting and whether they may: it resolves the
// person behind a human command, checks them against the roles that
// policies give each verb, verifies signed triggers, and verifies JWTs of
// callers from other systems.
//
// Who is acting (Resolve):
//
//   - In CI (GITHUB_ACTIONS=true) the identity is GitHub's:
//     GITHUB_TRIGGERING_ACTOR (the person who started or re-ran the
//     workflow), else GITHUB_ACTOR. A --by that names someone else is
//     refused: a flag anyone can type cannot outrank what GitHub says.
//   - Outside CI it is `git config user.email`, mapped to a GitHub login by
//     the policies' identities: section. An unmapped or missing email is an
//     unknown identity and is refused, with the line to add. --by must then
//     name that same login.
//   - Only for a dry run or with --no-push, where nothing reaches the
//     repository, --by may name anyone; it is kept as an unverified claim
//     (Verified false, Source "claim").
//
// Approvals decided on GitHub are made by the pull request's merger or
// closer (PullRequestIdentity), approvals made with `astra approve` by
// the person whose listed SSH key signed them (SignatureIdentity): never
// by whoever runs a command, in CI or not. A JWT caller is the token's subject, acting
// as the actor its claims map to (Verifier).
//
// A local identity is as good as the machine's git configuration: what
// binds it is that its effects reach the shared repository only through a
// push, which branch protection and CODEOWNERS govern.
package identity

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Sources of an identity.
const (
	SourceGitHubActions = "github-actions" // GITHUB_TRIGGERING_ACTOR or GITHUB_ACTOR in CI
	SourceGitConfig     = "git-config"     // git config user.email mapped through identities:
	SourceClaim         = "claim"          // --by in a dry run or with --no-push: unverified
	SourcePullRequest   = "pull-request"   // the merger or closer of an approval pull request
	SourceJWT           = "jwt"            // a verified token of a configured issuer
	SourceSignature     = "signature"      // the approver whose listed SSH key signed an approval
)

// Identity is who performs an action.
type Identity struct {
	Login    string         // GitHub login; for a JWT the token's sub
	Source   string         // one of the Source constants
	Verified bool           // false only for SourceClaim
	Email    string         // git config user.email, outside CI
	Actor    string         // for a JWT: the actor its claims map to
	Claims   map[string]any // for a JWT: all its claims
	// TokenID names a JWT (a hash of its issuer and jti) without revealing
	// it, and TokenExpires is its exp: it is accepted once until then.
	TokenID      string
	TokenExpires time.Time
}

// String names the identity and where it comes from, for messages and the
// ledger's detail.
func (id Identity) String() string {
	who := id.Login
	if who == "" {
		who = "unknown"
	}
	switch id.Source {
	case SourceGitHubActions:
		return who + " (GitHub Actions)"
	case SourceGitConfig:
		return who + " (git config " + id.Email + ")"
	case SourceClaim:
		return who + " (unverified --by)"
	case SourcePullRequest:
		return who + " (pull request)"
	case SourceJWT:
		return who + " (JWT, as actor " + id.Actor + ")"
	case SourceSignature:
		return who + " (signing key)"
	}
	return who
}

// PullRequestIdentity is the person GitHub reports as having merged or
// closed a pull request.
func PullRequestIdentity(login string) Identity {
	return Identity{Login: login, Source: SourcePullRequest, Verified: true}
}

// SignatureIdentity is the person whose SSH key, listed for them under
// signing_keys in policies, signed an approval.
func SignatureIdentity(login string) Identity {
	return Identity{Login: login, Source: SourceSignature, Verified: true}
}

// Refusals of Resolve, matched with errors.Is.
var (
	ErrUnknown  = errors.New("unknown identity")
	ErrMismatch = errors.New("--by names someone else")
)

// Env is what Resolve looks at.
type Env struct {
	Getenv     func(string) string    // the process environment (nil: os.Getenv)
	GitEmail   func() (string, error) // git config user.email; see GitEmail
	Identities map[string]string      // policies' identities: email -> login
	By         string                 // the --by flag, "" when not given
	Unverified bool                   // a dry run or --no-push: --by is taken as a claim
}

// Resolve says who runs this command, by the rule in the package comment.
// On error the Identity still holds what is known (the GitHub actor, the
// email), so the refusal can be recorded with it.
func Resolve(env Env) (Identity, error) {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	by := strings.TrimPrefix(strings.TrimSpace(env.By), "@")
	if env.Getenv("GITHUB_ACTIONS") == "true" {
		id := Identity{Login: env.Getenv("GITHUB_TRIGGERING_ACTOR"), Source: SourceGitHubActions, Verified: true}
		if id.Login == "" {
			id.Login = env.Getenv("GITHUB_ACTOR")
		}
		switch {
		case id.Login == "":
			return Identity{}, fmt.Errorf("%w: GITHUB_ACTIONS is true but GITHUB_ACTOR is not set", ErrUnknown)
		case by != "" && !strings.EqualFold(by, id.Login):
			return id, fmt.Errorf("%w: %s, but GitHub says %s is acting; in CI the identity is GitHub's, drop --by", ErrMismatch, by, id.Login)
		}
		return id, nil
	}

	claim := Identity{Login: by, Source: SourceClaim}
	var email string
	var err error
	if env.GitEmail != nil {
		email, err = env.GitEmail()
	}
	email = strings.TrimSpace(email)
	if err != nil || email == "" {
		if by != "" && env.Unverified {
			return claim, nil
		}
		why := "git config user.email is not set"
		if err != nil {
			why = "cannot read git config user.email: " + err.Error()
		}
		return Identity{Source: SourceGitConfig}, fmt.Errorf("%w: %s; set it (git config user.email you@example.com) and map it to your GitHub login under identities: in policies/", ErrUnknown, why)
	}
	claim.Email = email
	id := Identity{Login: lookup(env.Identities, email), Source: SourceGitConfig, Email: email, Verified: true}
	if by != "" && env.Unverified && !strings.EqualFold(by, id.Login) {
		return claim, nil
	}
	if id.Login == "" {
		return Identity{Source: SourceGitConfig, Email: email}, fmt.Errorf("%w: %s is not mapped to a GitHub login; add `identities: {%s: <your GitHub login>}` in policies/ (reviewed like any policy change)", ErrUnknown, email, email)
	}
	if by != "" && !strings.EqualFold(by, id.Login) {
		return id, fmt.Errorf("%w: %s, but git config user.email %s is %s; drop --by, or use it only with --dry-run or --no-push", ErrMismatch, by, email, id.Login)
	}
	return id, nil
}

// lookup maps an email to a login; emails compare case-insensitively.
func lookup(identities map[string]string, email string) string {
	for e, login := range identities {
		if strings.EqualFold(e, email) {
			return login
		}
	}
	return ""
}
