package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/posture"
)

// The posture gate (docs/security.md, "The documented setup"): a tier-2
// run is admitted only when the repository's safety posture holds: the
// checks a CI run can make with its own token pass (posture.Tier2).
// Otherwise it is skipped with reason posture, the failing checks in the
// event, unless policies' trust.accept_risk says why the repository runs
// tier 2 anyway: then it goes ahead and the acceptance is recorded once
// per run. The posture is checked at most once per run, when the first
// tier-2 run is about to be admitted. GitHub failing to answer is an
// outage: the run is left due for the next run (nothing recorded) and this
// run ends with exit 3.

// postureVerdict is the one posture check of a run.
type postureVerdict struct {
	once    sync.Once
	ok      bool
	failing []posture.Check
	outage  error
}

// checkPosture checks the posture, once per run.
func (r *Runner) checkPosture(ctx context.Context) *postureVerdict {
	v := &r.posture
	v.once.Do(func() {
		in := r.opts.Posture
		in.Root, in.Policies, in.Run, in.Tier2Only = r.opts.Root, &r.cfg.Policies, true, true
		checks, err := posture.Run(ctx, in)
		v.outage = err
		v.ok, v.failing = posture.Tier2(checks)
	})
	return v
}

// admitTier2 is the posture gate for t, about to be admitted; false means
// t does not run now (its decision recorded, or left for the next run).
func (s *session) admitTier2(ctx context.Context, t *task) (bool, error) {
	if t.sched.SafetyTier < model.TierExternal {
		return true, nil
	}
	if ok, err := s.admitUntampered(t); !ok {
		return false, err
	}
	v := s.r.checkPosture(ctx)
	if v.ok {
		return true, nil
	}
	summary := posture.Summary(v.failing)
	if why := s.r.cfg.Policies.Trust.AcceptRisk; why != "" {
		return true, s.acceptRisk(why, v.failing, summary)
	}
	if v.outage != nil {
		t.outcome.Action, t.outcome.Reason = ActionDeferred, ledger.ReasonPosture
		t.outcome.Detail = "the safety posture could not be checked (GitHub did not answer); the next run tries again"
		if !s.postureOutage {
			s.postureOutage = true
			s.report.InfraErrors = append(s.report.InfraErrors, s.r.opts.Redact.String("checking the safety posture for tier 2: "+v.outage.Error()))
		}
		return false, nil
	}
	return false, s.skip(t, ledger.ReasonPosture, "tier 2 needs the repository's safety posture, which does not hold: "+summary+
		" (run `astra doctor` for the fixes, or say why the repository accepts the risk in policies: trust.accept_risk)")
}

// riskDetail is the detail of trust.risk_accepted.
type riskDetail struct {
	Reason string          `json:"reason"`
	Checks []posture.Check `json:"checks"`
}

// acceptRisk records, once per run, that tier 2 runs under
// trust.accept_risk without the posture it needs.
func (s *session) acceptRisk(why string, failing []posture.Check, summary string) error {
	if s.riskAccepted {
		return nil
	}
	s.riskAccepted = true
	s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("tier 2 runs without the safety posture it needs, as policies accept (trust.accept_risk: %q): %s", why, summary))
	d, err := json.Marshal(riskDetail{Reason: why, Checks: failing})
	if err != nil {
		return errkind.Infra(err)
	}
	return s.record(&ledger.Event{Event: ledger.TrustRiskAccepted, Status: ledger.StatusOK, Reason: "accept_risk", Error: summary, Detail: d})
}
