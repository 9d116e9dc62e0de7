package state

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// Breach is an event the ledger's own rules forbid where it stands: an
// approval used that was never approved, or approved by nobody, or with a
// token already used. astra never writes one, so it is a forged line or a
// misbehaving runner. Replay still applies it (the state is what the
// ledger says); a run that records names it in ledger.tampered, and tier 2
// stops until a person acknowledges it (astra trust resume).
type Breach struct {
	Seq      int64       `json:"seq"`
	Event    ledger.Kind `json:"event"`
	Schedule string      `json:"schedule_id,omitempty"`
	Key      string      `json:"key,omitempty"`
	By       string      `json:"by,omitempty"`
	Rule     string      `json:"rule"`
	Why      string      `json:"why"`
	Reported bool        `json:"reported,omitempty"` // a ledger.tampered named it
}

// Rules a Breach breaks, in a word.
const (
	RuleUnapproved  = "consumed_unapproved" // approval.consumed of a run no approval approved
	RuleUnproven    = "approved_unproven"   // approval.approved saying neither who nor how
	RuleReused      = "approved_used_token" // approval.approved with a token already used
	RuleShort       = "approved_short"      // approval.approved completing an approval with fewer distinct approvers than it needs
	RuleOutsideRole = "by_outside_role"     // a person's decision by someone the policies do not let take it
)

func (b Breach) String() string {
	return fmt.Sprintf("%s (seq %d) of %s: %s", b.Event, b.Seq, orDash(b.Key, b.Schedule), b.Why)
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	if b != "" {
		return b
	}
	return "-"
}

// check notes the breach e makes against s, before e is applied.
func (s *State) check(e *ledger.Event) {
	var rule, why string
	switch e.Event {
	case ledger.ApprovalConsumed:
		a := s.Approvals[e.ScheduleID]
		switch {
		case a == nil || a.Key != e.IdempotencyKey:
			rule, why = RuleUnapproved, "no approval of this run is open: it was never approved, or its approval was used, refused, rejected or expired"
		case a.Status != ledger.StatusApproved:
			rule, why = RuleUnapproved, fmt.Sprintf("its approval request is %s, not approved", a.Status)
		case !strings.EqualFold(a.By, e.By):
			rule, why = RuleUnapproved, fmt.Sprintf("it names %s as the approver, the approval %s", orDash(e.By, ""), orDash(a.By, ""))
		}
	case ledger.ApprovalApproved:
		d := detailOf(e)
		switch {
		case e.By == "" || strings.HasSuffix(e.By, " (unverified)"):
			rule, why = RuleUnproven, "it names no verified approver"
		case d.Via == ViaPullRequest && e.PR == 0, d.Via == ViaSignature && d.Signer == "":
			rule, why = RuleUnproven, "it says how it was given ("+d.Via+") without the pull request or key that proves it"
		case d.Via != ViaPullRequest && d.Via != ViaSignature && d.Via != "":
			rule, why = RuleUnproven, "it was given by an unknown way: "+d.Via
		case d.Token != "" && !s.Consumed[d.Token].IsZero():
			rule, why = RuleReused, "its token was already used for a run"
		case e.Status != ledger.StatusPartial && d.Required > 1 && s.approvers(e) < d.Required:
			rule, why = RuleShort, fmt.Sprintf("it completes an approval that needs %d distinct approvers with %d", d.Required, s.approvers(e))
		case d.Via == ViaPullRequest:
			// A merge approves the request astra opened its pull request for.
			if a := s.Approvals[e.ScheduleID]; a == nil || a.Key != e.IdempotencyKey || a.Status != ledger.StatusPending || a.PR != e.PR {
				rule, why = RuleUnproven, fmt.Sprintf("it names pull request #%d, which no open request of this run was made with", e.PR)
			}
		}
	default:
		return
	}
	if rule != "" {
		s.Breached[strconv.FormatInt(e.Seq, 10)] = &Breach{Seq: e.Seq, Event: e.Event, Schedule: e.ScheduleID, Key: e.IdempotencyKey, By: e.By, Rule: rule, Why: why}
	}
}

// approvers counts the distinct approvers of the approval e completes,
// e's own and the reviewers it names included.
func (s *State) approvers(e *ledger.Event) int {
	q := &Quorum{}
	if a := s.Approvals[e.ScheduleID]; a != nil && a.Key == e.IdempotencyKey {
		q.Approvers = slices.Clone(a.Approvers())
	}
	for _, who := range append([]string{e.By}, detailOf(e).ReviewersOf(e)...) {
		if !q.has(who) {
			q.Approvers = append(q.Approvers, who)
		}
	}
	return len(q.Approvers)
}

// Decision is a person's decision replayed: who took it, so that a run can
// hold it to the roles the policies give (RuleOutsideRole).
type Decision struct {
	Seq      int64
	Event    ledger.Kind
	Schedule string
	Key      string
	By       string // as recorded; " (unverified)" is part of it
	Via      string // approvals: how it was given
	// An approval given with a signature: what proves it.
	Token, Signer string
	Proof         json.RawMessage
}

// Decisions are the people's decisions this load of the state replayed:
// after the snapshot's head, or the month's when it replayed instead
// (Fallback). A snapshot does not store them.
func (s *State) Decisions() []Decision { return s.decided }

// decision notes e when a person took it.
func (s *State) decision(e *ledger.Event) {
	switch e.Event {
	case ledger.ApprovalApproved, ledger.ApprovalRejected, ledger.BudgetResumed, ledger.TrustResumed,
		ledger.DeadLetterReleased, ledger.ClockCorrected, ledger.AstraPaused, ledger.AstraResumed, ledger.RunCancelled:
	default:
		return
	}
	if e.By == "" {
		return
	}
	d := detailOf(e)
	s.decided = append(s.decided, Decision{Seq: e.Seq, Event: e.Event, Schedule: e.ScheduleID, Key: e.IdempotencyKey, By: e.By,
		Via: d.Via, Token: d.Token, Signer: d.Signer, Proof: d.Proof})
}

// BreachDetail is the part of ledger.tampered's detail that names the
// breaches it reports: replay forgets those.
type BreachDetail struct {
	Breaches []Breach `json:"breaches,omitempty"`
}

// reported marks the breaches a ledger.tampered names as reported: only
// those replay itself found before it, with the same event and rule. A
// report cannot excuse what replay did not find, nor what comes after it.
func (s *State) reported(e *ledger.Event) {
	var d BreachDetail
	if json.Unmarshal(e.Detail, &d) != nil {
		return
	}
	for _, b := range d.Breaches {
		if found := s.Breached[strconv.FormatInt(b.Seq, 10)]; found != nil && found.Seq < e.Seq && found.Event == b.Event && found.Rule == b.Rule {
			found.Reported = true
		}
	}
}

// Found reports whether replay found a breach at seq: the decision there
// is reported with it, not checked again.
func (s *State) Found(seq int64) bool {
	return s.Breached[strconv.FormatInt(seq, 10)] != nil
}

// Breaches are the breaches replayed that no ledger.tampered names yet,
// in ledger order: what a run that records reports.
func (s *State) Breaches() []Breach {
	var out []Breach
	for _, b := range s.Breached {
		if !b.Reported {
			out = append(out, *b)
		}
	}
	slices.SortFunc(out, func(a, b Breach) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// RuleChecker holds a stream of events to the rules replay checks,
// replaying only what they need (approvals, checkpoints, tamper reports):
// a verify holds the whole month to them at little more than the cost of
// reading it.
type RuleChecker struct{ st *State }

// NewRuleChecker returns a checker with nothing replayed.
func NewRuleChecker() *RuleChecker { return &RuleChecker{st: New(time.Time{})} }

// Apply replays e when the rules need it.
func (c *RuleChecker) Apply(e *ledger.Event) {
	switch e.Event {
	case ledger.ApprovalRequested, ledger.ApprovalApproved, ledger.ApprovalRejected, ledger.ApprovalExpired,
		ledger.ApprovalConsumed, ledger.ApprovalRefused, ledger.ApprovalIgnored, ledger.LedgerCheckpoint, ledger.LedgerTampered:
		c.st.Apply(e)
	}
}

// Breaches are the breaches replayed that no ledger.tampered reports.
func (c *RuleChecker) Breaches() []Breach { return c.st.Breaches() }
