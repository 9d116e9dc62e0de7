package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
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

// reviewApprovers reads the reviews of pull request number, whose head
// astra wrote is head, and tallies them. counted reports whether a login
// already counts (the merger, a signer): they are not counted twice. An
// outage reading the reviews or a role is returned as a check with outage
// set.
func (r *Runner) reviewApprovers(ctx context.Context, sc *model.Schedule, number int, head string, counted func(string) bool) (reviewTally, check) {
	var t reviewTally
	reviews, err := r.forge.PullRequestReviews(ctx, number)
	if err != nil {
		return t, check{what: fmt.Sprintf("reading the reviews of pull request #%d", number), outage: err}
	}
	latest := map[string]forge.Review{} // lower-cased login -> latest deciding review
	var order []string
	for _, rv := range reviews {
		switch rv.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
		default:
			continue // COMMENTED and PENDING decide nothing
		}
		k := strings.ToLower(rv.User)
		if _, seen := latest[k]; !seen {
			order = append(order, k)
		}
		latest[k] = rv
	}
	for _, k := range order {
		rv := latest[k]
		switch {
		case rv.User == "" || counted(rv.User):
			continue
		case rv.State == "CHANGES_REQUESTED":
			t.skipped = append(t.skipped, rv.User+" requested changes")
			continue
		case rv.State == "DISMISSED":
			t.skipped = append(t.skipped, rv.User+"'s review was dismissed")
			continue
		case rv.CommitID != head:
			t.skipped = append(t.skipped, fmt.Sprintf("%s approved %.12s, not the head astra wrote", rv.User, rv.CommitID))
			continue
		}
		d := r.authorize(ctx, model.VerbApprove, identity.PullRequestIdentity(rv.User), sc)
		switch {
		case d.Undecided():
			return t, check{what: fmt.Sprintf("checking whether %s, who approved pull request #%d, may approve", rv.User, number), outage: d.Err}
		case !d.Allowed:
			t.skipped = append(t.skipped, fmt.Sprintf("%s may not approve (%s)", rv.User, d.Reason))
			continue
		}
		t.approvers = append(t.approvers, rv.User)
	}
	return t, check{}
}

// Reviews is how the reviews of an open approval pull request stand: the
// approvers they add, as its merge would count them now, and whose
// reviews do not count and why.
type Reviews struct {
	Approvers []string
	Skipped   []string
}

// PendingReviews tallies the reviews of schedule id's open approval pull
// request for `astra approvals list`; the zero Reviews when it has none or
// GitHub is not configured. It records nothing: the merge counts them
// again.
func (r *Runner) PendingReviews(ctx context.Context, id string, st *state.State) (Reviews, error) {
	sc, req := r.cfg.Schedule(id), st.Approvals[id]
	if r.forge == nil || sc == nil || req == nil || req.PR == 0 || req.Status != ledger.StatusPending && req.Status != ledger.StatusPartial {
		return Reviews{}, nil
	}
	head := req.Head
	if head == "" { // requested by an older astra: the pull request's head
		pr, err := r.forge.PullRequest(ctx, req.PR)
		if err != nil {
			return Reviews{}, err
		}
		head = pr.HeadSHA
	}
	t, c := r.reviewApprovers(ctx, sc, req.PR, head, func(login string) bool { return hasLogin(req.Approvers(), login) })
	if c.outage != nil {
		return Reviews{}, fmt.Errorf("%s: %w", c.what, c.outage)
	}
	return Reviews{Approvers: t.approvers, Skipped: t.skipped}, nil
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
