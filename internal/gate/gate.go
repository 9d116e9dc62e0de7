// Package gate decides whether a due slot may run now. Decisions are pure
// functions of the configuration, the replayed state and the time, taken in
// a fixed order so that the reason recorded in the ledger is predictable:
//
//  1. quarantine: the schedule has a dead letter and quarantine: true
//  2. actor scopes: the actor must exist and grant every tool capability
//     (seed 003: scopes are checked before autonomy; fail closed)
//  3. actor rate limits (per minute, per hour)
//  4. global budget pause (pause-all, or pause-non-critical for non-critical;
//     tier 0 is never budget-limited)
//  5. per-day budget (tier 1 default 4; tier 0 is never limited)
//  6. approval: tier 2, task policy auto_execute=false, tool
//     requires_approval, autonomy L0/L1, or tool risk above the policy's
//     max_risk_level — the strictest of them wins
//
// Cheap hard denials come first so that an approval is only requested for
// a run that could otherwise go ahead.
package gate

import (
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
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
}

// Input is everything a decision depends on.
type Input struct {
	Schedule *model.Schedule
	Policies *model.Policies
	State    *state.State
	Now      time.Time
}

// Check applies the gates in order.
func Check(in Input) Decision {
	s, p := in.Schedule, in.Policies
	tool := p.Tools[s.TargetTool]
	if tool == nil {
		return skip(ledger.ReasonPolicy, "tool %q is not in the catalog", s.TargetTool)
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
	if d, ok := rateLimited(actor, s.Actor, in); ok {
		return d
	}
	// Tier 0 is never budget-limited (brief): neither per day nor by the pause.
	if pz := in.State.Pause; pz != nil && s.SafetyTier > model.TierReadOnly &&
		(pz.Mode == model.PauseAll || (pz.Mode == model.PauseNonCritical && !s.Critical)) {
		return skip(ledger.ReasonPaused, "global %s budget reached (%s); resumes next %s or with `astra budget resume`", pz.Period, pz.Mode, pz.Period)
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
	if rl.PerMinute > 0 {
		if n := in.State.RunsSince(id, in.Now.Add(-time.Minute)); n >= rl.PerMinute {
			return skip(ledger.ReasonRateLimited, "actor %s started %d runs in the last minute (limit %d)", id, n, rl.PerMinute), true
		}
	}
	if rl.PerHour > 0 {
		if n := in.State.RunsSince(id, in.Now.Add(-time.Hour)); n >= rl.PerHour {
			return skip(ledger.ReasonRateLimited, "actor %s started %d runs in the last hour (limit %d)", id, n, rl.PerHour), true
		}
	}
	return Decision{}, false
}

func skip(reason, format string, args ...any) Decision {
	return Decision{Action: Skip, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
