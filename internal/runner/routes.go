package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/markdown"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/model"
)

// route sends a successful run's result where its schedule says (one of
// silent, notify, memory_update, chain_next). Called with s.mu held.
func (s *session) route(ctx context.Context, t *task, res executor.Result) {
	// Autonomy L2 runs and notifies, L3 runs silently. Every L2 run is
	// announced in the CI log and job summary, whatever its route.
	t.outcome.Notify = t.sched.Autonomy == model.L2ExecuteNotify
	switch t.sched.ResultRoute.Type {
	case model.RouteChainNext:
		s.chain(ctx, t, res)
	case model.RouteMemoryUpdate:
		ev := memory.Stored(t.event(ledger.RunCompleted, ledger.StatusOK), res.Output)
		if err := s.j.Record(ev); err != nil {
			s.report.Errors = append(s.report.Errors, err.Error())
		}
		t.outcome.Detail = fmt.Sprintf("stored in memory (%d estimated tokens)", ev.Usage.Tokens)
	case model.RouteNotify:
		s.notify(ctx, t, res)
	}
}

// notify posts the result to the tracking issue (deduplicated by run id)
// or to the webhook, and records that it did.
func (s *session) notify(ctx context.Context, t *task, res executor.Result) {
	rr := t.sched.ResultRoute
	ev := t.event(ledger.NotifySent, ledger.StatusOK)
	body := fmt.Sprintf("astra ran **%s** (%s, %s)\n\n%s", markdown.Code(t.sched.Name), markdown.Code(t.runID()), t.slot.UTC().Format(time.RFC3339),
		markdown.Fence("", strings.TrimSpace(s.r.tail(res.Output))))
	var err error
	switch {
	case rr.Issue > 0 && s.r.opts.Notify == nil:
		err = fmt.Errorf("result_route notify to issue #%d needs GITHUB_TOKEN and GITHUB_REPOSITORY", rr.Issue)
	case rr.Issue > 0:
		ev.PR = rr.Issue
		err = s.r.opts.Notify(ctx, rr.Issue, body, t.runID(), s.notifySince())
	case rr.Webhook != "":
		err = s.r.postWebhook(ctx, rr.Webhook, t, res)
	default:
		return // notify without a target: the L2 notice in the CI log is the notification
	}
	if err != nil {
		ev.Status, ev.Error = ledger.StatusFailed, s.r.opts.Redact.String(err.Error())
		s.report.Errors = append(s.report.Errors, "notify: "+ev.Error)
	}
	if err := s.j.Record(ev); err != nil {
		s.report.Errors = append(s.report.Errors, err.Error())
	}
}

// notifyMargin covers the difference between this run's clock and
// GitHub's: the trusted-time check bounds it to 5 minutes.
const notifyMargin = 15 * time.Minute

// notifySince bounds the comments a notification's check for an earlier
// copy of itself reads: a run's notification is never posted before the
// run started, so a tracking issue's older comments need not be read. A
// test clock says nothing of GitHub's: then every comment is read.
func (s *session) notifySince() time.Time {
	if s.r.opts.TestClock {
		return time.Time{}
	}
	return s.now.Add(-notifyMargin)
}

// postWebhook sends the result as JSON, signed like http tools when
// ASTRA_WEBHOOK_SECRET is set; the run id header lets receivers dedupe.
func (r *Runner) postWebhook(ctx context.Context, url string, t *task, res executor.Result) error {
	body, _ := json.Marshal(map[string]any{"schedule_id": t.sched.ID, "name": t.sched.Name, "run_id": t.runID(),
		"trace_id": t.traceID, "slot": t.slot.UTC().Format(time.RFC3339), "status": res.Status, "output": res.Output})
	return r.postJSON(ctx, url, "X-Astra-Run-Id", t.runID(), body)
}

// postJSON POSTs body to url, signed like http tools when
// ASTRA_WEBHOOK_SECRET is set, with id in the header idHeader for the
// receiver to deduplicate.
func (r *Runner) postJSON(ctx context.Context, url, idHeader, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idHeader, id)
	if secret := r.opts.Getenv("ASTRA_WEBHOOK_SECRET"); secret != "" {
		req.Header.Set(executor.SignatureHeader, executor.Sign([]byte(secret), body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

// recall is the memory handed to t's tool, when its schedule asks for it.
func (r *Runner) recall(t *task, now time.Time) string {
	sc := t.sched
	if sc.Recall == nil {
		return ""
	}
	all, err := memory.Read(r.opts.Root, now)
	if err != nil || len(all) == 0 {
		return ""
	}
	picked := memory.Recall(all, memory.Budget(*sc.Recall, memory.TaskType(sc, t.mode, t.depth > 0)))
	if len(picked) == 0 {
		return ""
	}
	b, _ := json.Marshal(picked)
	return string(b)
}
