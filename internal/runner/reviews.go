package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/model"
)

// Reviews as approvers (approvals_required: N through a pull request).
// GitHub proves who reviewed: a review's author is the account that made
// it, and its commit is the head it was made on. A review counts when its
// author's latest decision (GitHub's rule: comments decide nothing)
// approves the head astra wrote and its author may approve the schedule
// now. The merger counts once whatever they reviewed, and a reviewer who
// also signed counts once. A run reads the reviews again before it uses
// the approval: a line that names reviewers proves nothing by itself.

// reviewTally is what the reviews of an approval pull request say.
type reviewTally struct {
	approvers []string // role members whose latest review approves the head
	skipped   []string // whose reviews did not count, and why
}

// reviewApprovers reads pr's reviews and tallies them. counted reports
// whether a login already counts (the merger, a signer): they are not
// counted twice. An outage reading the reviews or a role is returned as
// a check with outage set.
func (s *session) reviewApprovers(ctx context.Context, sc *model.Schedule, pr forge.PR, counted func(string) bool) (reviewTally, check) {
	var t reviewTally
	reviews, err := s.r.forge.PullRequestReviews(ctx, pr.Number)
	if err != nil {
		return t, check{what: fmt.Sprintf("reading the reviews of pull request #%d", pr.Number), outage: err}
	}
	latest := map[string]forge.Review{} // lower-cased login -> latest deciding review
	var order []string
	for _, r := range reviews {
		switch r.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
		default:
			continue // COMMENTED and PENDING decide nothing
		}
		k := strings.ToLower(r.User)
		if _, seen := latest[k]; !seen {
			order = append(order, k)
		}
		latest[k] = r
	}
	for _, k := range order {
		r := latest[k]
		switch {
		case r.User == "" || counted(r.User):
			continue
		case r.State == "CHANGES_REQUESTED":
			t.skipped = append(t.skipped, r.User+" requested changes")
			continue
		case r.State == "DISMISSED":
			t.skipped = append(t.skipped, r.User+"'s review was dismissed")
			continue
		case r.CommitID != pr.HeadSHA:
			t.skipped = append(t.skipped, fmt.Sprintf("%s approved %.12s, not the head that was merged", r.User, r.CommitID))
			continue
		}
		d := s.authorize(ctx, model.VerbApprove, identity.PullRequestIdentity(r.User), sc)
		switch {
		case d.Undecided():
			return t, check{what: fmt.Sprintf("checking whether %s, who approved pull request #%d, may approve", r.User, pr.Number), outage: d.Err}
		case !d.Allowed:
			t.skipped = append(t.skipped, fmt.Sprintf("%s may not approve (%s)", r.User, d.Reason))
			continue
		}
		t.approvers = append(t.approvers, r.User)
	}
	return t, check{}
}

// skippedNote is ", not counted: ..." for a message, or "".
func (t reviewTally) skippedNote() string {
	if len(t.skipped) == 0 {
		return ""
	}
	return "; not counted: " + strings.Join(t.skipped, ", ")
}

// foldIn returns who with each of more not in it yet, case-insensitively.
func foldIn(who []string, more ...string) []string {
	out := slices.Clip(who)
	for _, m := range more {
		if !hasLogin(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// hasLogin reports whether logins holds login, case-insensitively (as
// GitHub compares logins).
func hasLogin(logins []string, login string) bool {
	return slices.ContainsFunc(logins, func(l string) bool { return strings.EqualFold(l, login) })
}
