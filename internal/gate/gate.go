// Package gate decides whether a due slot may run now. Decisions are pure
// functions of the configuration, the replayed state and the time, taken in
// a fixed order so that the reason recorded in the ledger is predictable:
//
//  1. quarantine: the schedule has a dead letter and quarantine: true
//  2. actor scopes: the actor must exist and grant every tool capability
//     (scopes are checked before autonomy; fail closed)
//     2b. tool lists: the tool_allow / tool_deny of the schedule, its actor
//     and, for a chained step, every step before it (deny wins)
//  3. actor rate limits (per minute, per hour)
//  4. global spend: a pause (pause-all, or pause-non-critical for
//     non-critical schedules) holds every schedule that can spend, whatever
//     its tier; and a run is admitted only if its cost cap fits in what is
//     left of the day and the month after what was spent and what every
//     open claim on the remote holds (see Admit)
//  5. per-day run count (tier 1 default 4; tier 0 has none, but step 4
//     holds it like any tier: only free runs pass a pause)
//  6. approval: tier 2, task policy auto_execute=false, tool
//     requires_approval, autonomy L0/L1, tool risk_level high (whatever
//     the tier), or tool risk above the policy's
//     max_risk_level — the strictest of them wins
//
// Cheap hard denials come first so that an approval is only requested for
// a run that could otherwise go ahead.
package gate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

// Action is what the gate allows.
type Action int

const (
	Run          Action = iota // go ahead
	Skip                       // denied; Reason says why
	NeedApproval               // may run once a valid approval exists
)

func (a Action) String() string {
	return [...]string{"run", "skip", "needs approval"}[a]
}

// Decision is a gate's verdict with its explanation.
type Decision struct {
	Action Action
	Reason string // ledger reason for Skip
	Detail string // plain words for people
	// Approval facts, set when Action is NeedApproval.
	ApprovalReasons []string
	Draft           bool   // L1: the request carries the dry-run result
	ApproverRole    string // role whose members may approve, if the policy names one
	// RateLimit is set when an actor rate limit skipped the run: when the
	// caller may try again.
	RateLimit *RateLimit
}

// RateLimit is an actor rate limit that was reached: Remaining runs of
// Limit are left in the Window (none: it was reached), and one more may
// start from ResetAt, when the oldest counted run leaves the window.
type RateLimit struct {
	Actor     string    `json:"actor"`
	Window    string    `json:"window"` // minute, hour
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	ResetAt   time.Time `json:"reset_at"`
}

// Input is everything a decision depends on.
type Input struct {
	Schedule *model.Schedule
	Policies *model.Policies
	State    *state.State
	Now      time.Time
	// Inherited: the tool lists of the steps before a chained step.
	Inherited model.ToolLists
	// Claimed: the run's own claim is among the open claims (admission
	// again as it starts), so its cap is counted there and not again.
	Claimed bool
}

// Stopped is the emergency stop (`astra pause --all`): while it holds,
// nothing starts, approved or claimed, whichever gate saw it first.
func Stopped(st *state.State) (Decision, bool) {
	p := st.Stopped
	if p == nil {
		return Decision{}, false
	}
	return skip(ledger.ReasonPaused, "astra is paused (astra pause --all by %s at %s: %s); nothing starts until `astra resume --all`",
		p.By, p.At.UTC().Format(time.RFC3339), p.Reason), true
}

// Check applies the gates in order.
func Check(in Input) Decision {
	s, p := in.Schedule, in.Policies
	tool := p.Tools[s.TargetTool]
	if tool == nil {
		return skip(ledger.ReasonPolicy, "tool %q is not in the catalog", s.TargetTool)
	}
	if d, stopped := Stopped(in.State); stopped {
		return d
	}
	if s.Quarantine && in.State.Quarantined(s.ID) {
		return skip(ledger.ReasonDeadLetter, "schedule is quarantined after a dead letter; release it with `astra dead-letter retry %s`", s.ID)
	}
	actor := p.Actor(s.Actor)
	if actor == nil {
		return skip(ledger.ReasonScopeDenied, "actor %q is not defined in policies", s.Actor)
	}
	if miss := model.Missing(actor.Scopes, tool.Capabilities); len(miss) > 0 {
		return skip(ledger.ReasonScopeDenied, "actor %q lacks scope for %s", s.Actor, strings.Join(miss, ", "))
	}
	if why := p.ToolLists(s, in.Inherited).Refuses(tool); why != "" {
		return skip(ledger.ReasonToolDenied, "%s", why)
	}
	if d, ok := rateLimited(actor, s.Actor, in); ok {
		return d
	}
	if d, held := Admit(in); held {
		return d
	}
	if s.SafetyTier >= model.TierLocalWrite && s.PerDayBudget > 0 {
		if used := in.State.ConsumedToday(s.ID); used >= s.PerDayBudget {
			return skip(ledger.ReasonBudget, "per-day budget used: %d of %d runs today (resets at 00:00 UTC)", used, s.PerDayBudget)
		}
	}
	if reasons := p.ApprovalReasons(s, tool); len(reasons) > 0 {
		d := Decision{Action: NeedApproval, Reason: ledger.ReasonApprovalPending, ApprovalReasons: reasons,
			Draft: s.Autonomy == model.L1Draft, Detail: "needs approval: " + strings.Join(reasons, "; ")}
		if tp := p.TaskPolicy(tool.Name, s.Tenant); tp != nil {
			d.ApproverRole = tp.ApproverRole
		}
		return d
	}
	return Decision{Action: Run, Detail: fmt.Sprintf("tier %d, %s", s.SafetyTier, s.Autonomy)}
}

func rateLimited(a *model.Actor, id string, in Input) (Decision, bool) {
	rl := a.RateLimit
	for _, w := range []struct {
		name  string
		span  time.Duration
		limit int
	}{{"minute", time.Minute, rl.PerMinute}, {"hour", time.Hour, rl.PerHour}} {
		if w.limit <= 0 {
			continue
		}
		if n := in.State.RunsSince(id, in.Now.Add(-w.span)); n >= w.limit {
			lim := &RateLimit{Actor: id, Window: w.name, Limit: w.limit, ResetAt: resetAt(in.State.ActorRuns[id], in.Now, w.span, w.limit)}
			d := skip(ledger.ReasonRateLimited, "actor %s started %d runs in the last %s (limit %d): %d left, the next may start at %s",
				id, n, w.name, w.limit, lim.Remaining, lim.ResetAt.UTC().Format(time.RFC3339))
			d.RateLimit = lim
			return d, true
		}
	}
	return Decision{}, false
}

// resetAt is when fewer than limit of the runs started at starts are
// inside the window ending then: the moment the (n-limit+1)th newest
// leaves it.
func resetAt(starts []time.Time, now time.Time, span time.Duration, limit int) time.Time {
	var in []time.Time
	for _, t := range starts {
		if t.After(now.Add(-span)) {
			in = append(in, t)
		}
	}
	if len(in) < limit {
		return now
	}
	slices.SortFunc(in, time.Time.Compare)
	return in[len(in)-limit].Add(span)
}

func skip(reason, format string, args ...any) Decision {
	return Decision{Action: Skip, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Free reports whether runs of s can spend nothing: builtin tools, and
// schedules whose budget declares max_cost_usd: 0 (the executor stops such
// a run the moment it reports any cost). Only free runs go ahead during a
// pause; the per-day run count still applies to them by tier.
func Free(s *model.Schedule, tool *model.Tool) bool {
	return tool.Kind == model.KindBuiltin || s.Budget.MaxCost == 0
}

// Reserve is what a run of s holds against the global budget while it
// runs: its cost cap, nothing for a free run.
func Reserve(s *model.Schedule, tool *model.Tool) money.USD {
	if Free(s, tool) {
		return 0
	}
	return s.Budget.MaxCost
}

// Admit applies the global budget to a run: pauses, then admission. A run
// is claimed only if spent + the caps of every open claim in the ledger
// (this runner's, other runners' and shards', a plan's queued jobs';
// state.Reserved) + its own cap fits in each period's limit. The claim's
// push is the compare-and-swap: a runner that decided on a stale ledger
// loses the push race and decides again on the remote's, so the caps of
// the open claims and the spend never pass a limit together, however many
// runners race. Spend then crosses a limit only by what runs report past
// their own caps (a run records at most twice its cap). The second result
// is false when the budget lets the run go.
func Admit(in Input) (Decision, bool) {
	s, p, st := in.Schedule, in.Policies, in.State
	tool := p.Tools[s.TargetTool]
	if tool == nil {
		return Decision{}, false
	}
	b := p.Budget
	if Free(s, tool) {
		return Decision{}, false
	}
	for _, period := range []string{"month", "day"} {
		pz := st.Pauses[period]
		if pz == nil || (pz.Mode == model.PauseNonCritical && s.Critical) || pz.Mode == model.AlertOnly {
			continue
		}
		return skip(ledger.ReasonPaused, "global %s budget reached (%s since %s); resumes next %s or with `astra budget resume`",
			period, pz.Mode, pz.Since.UTC().Format(time.RFC3339), period), true
	}
	if b.OnLimitReached == model.AlertOnly || (s.Critical && b.OnLimitReached == model.PauseNonCritical) {
		return Decision{}, false // only alerts; or critical work that keeps running past the limit
	}
	cap := Reserve(s, tool)
	for _, c := range []struct {
		period string
		limit  money.USD
	}{{"day", b.DailyLimit}, {"month", b.MonthlyLimit}} {
		limit, limited := st.Limit(c.period, c.limit) // a resume's bound, else the policy's
		if !limited {
			continue
		}
		spent, held := st.Spent(c.period), st.Reserved(c.period)
		if in.Claimed {
			held = max(held-cap, 0) // its own claim is among the open ones
		}
		if spent.Add(held).Add(cap) > limit { // saturating: a huge spend never wraps to money left
			return skip(ledger.ReasonBudget, "this run could spend up to %s, and the %s has %s left of its %s limit (%s spent, %s held by open claims)",
				cap.Dollars(), c.period, max(limit.Add(-spent.Add(held)), 0).Dollars(), limit.Dollars(), spent.Dollars(), held.Dollars()), true
		}
	}
	return Decision{}, false
}
