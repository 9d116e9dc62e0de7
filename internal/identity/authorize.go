package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/model"
)

// Teams answers team membership for role entries written "@org/team".
type Teams interface {
	IsTeamMember(ctx context.Context, org, team, login string) (bool, error)
}

// ApproverChecker is internal/forge's Client: IsApprover checks a login
// against logins and @org/team entries, failing closed with a clear error
// when a team cannot be read (of kind errkind.ErrInfra when GitHub could
// not answer).
type ApproverChecker interface {
	IsApprover(ctx context.Context, login string, allowed []string) (bool, error)
}

// ForgeTeams answers team membership through a forge client.
func ForgeTeams(c ApproverChecker) Teams { return forgeTeams{c} }

type forgeTeams struct{ c ApproverChecker }

func (f forgeTeams) IsTeamMember(ctx context.Context, org, team, login string) (bool, error) {
	return f.c.IsApprover(ctx, login, []string{"@" + org + "/" + team})
}

// Decision is the answer of Authorize: allowed, refused (Reason says
// why), or not decided at all (Err).
type Decision struct {
	Allowed bool
	Role    string // the role that allowed it
	Reason  string // plain words, for the message and the ledger
	// Err is set when no decision could be made: a team that might hold
	// the person could not be asked (GitHub down, a timeout, a rate limit
	// not waited out). It is of kind errkind.ErrInfra; the caller asks
	// again later and records no refusal. A team that is missing or that
	// the token may not read is a refusal instead: it fails closed.
	Err error
}

// Undecided reports whether an outage kept Authorize from deciding.
func (d Decision) Undecided() bool { return d.Err != nil }

// Authorize decides whether id may perform verb. Logins are compared
// case-insensitively without any API call; teams are asked of teams (nil
// when GitHub is not configured: a team entry then cannot allow anyone).
// A JWT caller may only trigger: the issuer's actors mapping that accepted
// its token is its permission.
func Authorize(ctx context.Context, pol *model.Policies, verb string, id Identity, teams Teams, taskRole string) Decision {
	if id.Source == SourceJWT {
		if verb != model.VerbTrigger {
			return Decision{Reason: fmt.Sprintf("%s may not %s: a JWT caller may only trigger events", id, verb)}
		}
		return Decision{Allowed: true, Reason: fmt.Sprintf("%s may trigger: its issuer's mapping in policies accepts it", id)}
	}
	if id.Login == "" {
		return Decision{Reason: fmt.Sprintf("an unknown identity may not %s", verb)}
	}
	roles := pol.RolesFor(verb, taskRole)
	if len(roles) == 0 {
		return Decision{Reason: fmt.Sprintf("nobody may %s: no role has this permission; name one under permissions: in policies/", verb)}
	}
	login := strings.TrimPrefix(id.Login, "@")
	if role := byLogin(pol, roles, login); role != "" {
		return Decision{Allowed: true, Role: role, Reason: fmt.Sprintf("%s is in role %s", id, role)}
	}
	role, team, refusals, outages := byTeam(ctx, pol, roles, login, teams)
	if role != "" {
		return Decision{Allowed: true, Role: role, Reason: fmt.Sprintf("%s is in role %s (team %s)", id, role, team)}
	}
	d := Decision{Reason: notInRole(pol, id, roles, refusals)}
	if len(outages) > 0 {
		d.Err = errkind.Infraf("cannot tell whether %s may %s: %w", id, verb, errors.Join(outages...))
	}
	return d
}

// byLogin is the first of roles that lists login by name, or "".
func byLogin(pol *model.Policies, roles []string, login string) string {
	for _, role := range roles {
		for _, m := range pol.Roles[role] {
			if !strings.Contains(m, "/") && strings.EqualFold(strings.TrimPrefix(m, "@"), login) {
				return role
			}
		}
	}
	return ""
}

// byTeam is the first of roles whose team (org/team) has login as a
// member, asking GitHub; the teams it could not ask are refusals when the
// answer was no, outages when GitHub could not say.
func byTeam(ctx context.Context, pol *model.Policies, roles []string, login string, teams Teams) (role, team string, refusals, outages []error) {
	for _, role := range roles {
		for _, m := range pol.Roles[role] {
			org, name, ok := strings.Cut(strings.TrimPrefix(m, "@"), "/")
			if !ok {
				continue
			}
			if teams == nil {
				refusals = append(refusals, fmt.Errorf("team %s cannot be checked without GitHub (GITHUB_TOKEN and GITHUB_REPOSITORY)", m))
				continue
			}
			in, err := teams.IsTeamMember(ctx, org, name, login)
			switch {
			case errors.Is(err, errkind.ErrInfra):
				outages = append(outages, err)
			case err != nil:
				refusals = append(refusals, err)
			case in:
				return role, m, refusals, outages
			}
		}
	}
	return "", "", refusals, outages
}

// notInRole says which roles id is not in, with their members.
func notInRole(pol *model.Policies, id Identity, roles []string, refusals []error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is not in role ", id)
	for i, role := range roles {
		if i > 0 {
			b.WriteString(" or ")
		}
		members := strings.Join(pol.Roles[role], ", ")
		if members == "" {
			members = "not defined"
		}
		fmt.Fprintf(&b, "%s (%s)", role, members)
	}
	if err := errors.Join(refusals...); err != nil {
		b.WriteString("; " + err.Error())
	}
	return b.String()
}
