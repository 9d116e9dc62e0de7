package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// The ledger's rules (docs/security.md, "The ledger's rules"): seals prove
// who wrote a line; the rules prove what a line may say where it stands.
// Replay notes an approval used that was never approved, or approved by
// nobody, or with a used token (state.Breach); a run holds each person's
// decision it replayed after the snapshot to the roles the policies give
// now, and checks the signature a signed approval carries. A run that
// records names what broke a rule in ledger.tampered, and tier 2 stops
// until a person acknowledges it (astra trust resume); other tiers go on.

// verbOf is the permission a person's decision of kind needs.
var verbOf = map[ledger.Kind]string{
	ledger.ApprovalApproved:   model.VerbApprove,
	ledger.ApprovalRejected:   model.VerbReject,
	ledger.BudgetResumed:      model.VerbResume,
	ledger.TrustResumed:       model.VerbTrustResume,
	ledger.DeadLetterReleased: model.VerbDeadLetterRetry,
	ledger.ClockCorrected:     model.VerbCorrectClock,
	ledger.AstraPaused:        model.VerbPause,
	ledger.AstraResumed:       model.VerbPause,
	ledger.RunCancelled:       model.VerbCancel,
}

// checkRules reports what broke the ledger's rules in the events this
// load replayed.
func (s *session) checkRules(ctx context.Context, st *state.State) {
	breaches := st.Breaches()
	if st.Fallback() == "" { // the month's decisions were held to the rules when they were new
		for _, d := range st.Decisions() {
			if st.Found(d.Seq) {
				continue
			}
			if b := s.checkDecision(ctx, d); b != nil {
				breaches = append(breaches, *b)
			}
		}
	}
	if len(breaches) == 0 {
		return
	}
	what := make([]string, len(breaches))
	for i, b := range breaches {
		what[i] = b.String()
	}
	why := fmt.Sprintf("%d event(s) in the ledger break its rules, which astra never does: %s", len(breaches), strings.Join(what, "; "))
	if s.r.opts.DryRun {
		s.report.Warnings = append(s.report.Warnings, s.r.opts.Redact.String(why)+"; a run that records reports them as ledger.tampered, and tier 2 stops")
		return
	}
	s.noteTamper(tamperDetail{Breaches: breaches, Why: why}, why, nil)
}

// checkDecision is the breach of decision d: an approval whose signature
// does not hold, or a decision the policies now do not let its author
// take; nil when it holds, or when that cannot be told now (an outage is a
// warning, never a breach).
func (s *session) checkDecision(ctx context.Context, d state.Decision) *state.Breach {
	breach := func(rule, why string) *state.Breach {
		return &state.Breach{Seq: d.Seq, Event: d.Event, Schedule: d.Schedule, Key: d.Key, By: d.By, Rule: rule, Why: why}
	}
	if d.Via == state.ViaSignature {
		a := &state.Approval{Key: d.Key, By: d.By, Token: d.Token, Signer: d.Signer, Proof: d.Proof}
		if why := s.checkProof(d.Schedule, a); why != "" {
			return breach(state.RuleUnproven, why)
		}
	}
	verb := verbOf[d.Event]
	login := strings.TrimSuffix(d.By, " (unverified)")
	id := identity.Identity{Login: login, Verified: login == d.By}
	switch d.Via {
	case state.ViaPullRequest:
		id = identity.PullRequestIdentity(login)
	case state.ViaSignature:
		id = identity.SignatureIdentity(login)
	}
	var sc *model.Schedule
	if d.Schedule != "" {
		sc = s.r.cfg.Schedule(d.Schedule)
	}
	dec := s.authorize(ctx, verb, id, sc)
	switch {
	case dec.Allowed:
		return nil
	case dec.Undecided():
		s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("%s (seq %d) by %s could not be held to the roles: %s",
			d.Event, d.Seq, login, s.r.opts.Redact.String(dec.Err.Error())))
		return nil
	}
	return breach(state.RuleOutsideRole, fmt.Sprintf("%s may not %s under the policies now (%s); if the roles changed since it was recorded, a person acknowledges it", login, verb, dec.Reason))
}
