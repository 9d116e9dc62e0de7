package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/astra-gitops/astra/internal/ledger"
)

// alert sends a budget alert (a threshold, a pause, usage past a run's
// bounds) to the people budget.alert_route names: a comment on its issue,
// deduplicated by key, so each alert reaches the issue once whichever
// runner raised it; a POST to its webhook, with key in X-Astra-Alert-Id for
// the receiver to deduplicate. Each delivery is recorded (notify.sent,
// reason budget); a failing route is recorded and warned about, and never
// stops the run. Called with s.mu held, once per recorded alert: the ledger
// holds each threshold and pause once per period.
func (s *session) alert(ctx context.Context, key, text string, cause *ledger.Event) {
	ar := s.r.cfg.Policies.Budget.AlertRoute
	delivered := func(err error, issue int) {
		ev := &ledger.Event{Event: ledger.NotifySent, Status: ledger.StatusOK, Reason: ledger.ReasonBudget, ScheduleID: cause.ScheduleID,
			IdempotencyKey: key, Period: cause.Period, PR: issue}
		if err != nil {
			ev.Status, ev.Error = ledger.StatusFailed, s.r.opts.Redact.String(err.Error())
			s.report.Warnings = append(s.report.Warnings, "budget alert not delivered: "+ev.Error)
		}
		if err := s.j.Record(ev); err != nil {
			s.report.Errors = append(s.report.Errors, err.Error())
		}
	}
	if ar.Issue > 0 {
		var err error
		if s.r.opts.Notify == nil {
			err = fmt.Errorf("budget.alert_route to issue #%d needs GITHUB_TOKEN and GITHUB_REPOSITORY", ar.Issue)
		} else {
			err = s.r.opts.Notify(ctx, ar.Issue, "astra budget alert: "+text, key, s.notifySince())
		}
		delivered(err, ar.Issue)
	}
	if ar.Webhook != "" {
		body, _ := json.Marshal(map[string]any{"alert": key, "event": cause.Event, "period": cause.Period, "schedule_id": cause.ScheduleID,
			"spent_usd": cause.Spent, "limit_usd": cause.Limit, "text": text})
		delivered(s.r.postJSON(ctx, ar.Webhook, "X-Astra-Alert-Id", key, body), 0)
	}
}
