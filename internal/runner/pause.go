package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/markdown"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// PauseAll is `astra pause --all` (stop true) and `astra resume --all`
// (stop false): the emergency stop. While it holds, every gate skips
// (reason paused), so run-due, run, trigger and plan start nothing; the
// commands that only read, and resuming, still work.
func (r *Runner) PauseAll(ctx context.Context, stop bool, reason string, id identity.Identity) (*Report, error) {
	what, kind, status := "resume every run", ledger.AstraResumed, ledger.StatusResumed
	if stop {
		what, kind, status = "pause every run", ledger.AstraPaused, ledger.StatusPaused
	}
	return r.record(ctx, what, func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbPause, "every run", id, nil); err != nil {
			return nil, err
		}
		switch cur := s.state().Stopped; {
		case stop && cur != nil:
			return nil, errkind.Usagef("astra is already paused, by %s: %s", cur.By, cur.Reason)
		case !stop && cur == nil:
			return nil, errkind.Usagef("astra is not paused: nothing to resume")
		}
		d, _ := json.Marshal(map[string]string{"reason": reason})
		return []*ledger.Event{{Event: kind, Status: status, By: by(id), Detail: d, Error: reason}}, nil
	})
}

// Cancel is `astra cancel`: a person withdraws the pending retry or
// approval request of one run, named by its idempotency key or a run id
// ("<key>#<attempt>"), and it does not run; the approval pull request of a
// withdrawn request is closed. A running attempt is marked
// (state.Open.Cancelled, and a marker file its runner looks for): its
// runner stops it, and it is not retried. It returns the key cancelled.
func (r *Runner) Cancel(ctx context.Context, ref, reason string, id identity.Identity) (*Report, string, error) {
	key, _, _ := strings.Cut(ref, "#")
	pr := 0 // the approval pull request of the request withdrawn
	rep, err := r.record(ctx, "cancel", func(s *session) ([]*ledger.Event, error) {
		st := s.state()
		ev := &ledger.Event{Event: ledger.RunCancelled, IdempotencyKey: key, Status: ledger.StatusCancelled, By: by(id), Error: reason}
		var what string
		if o := st.Open[key]; o != nil {
			ev.ScheduleID, ev.Slot, ev.Attempt, ev.Mode, ev.TraceID = o.ScheduleID, o.Slot, o.Attempt, o.Mode, o.TraceID
			what = fmt.Sprintf("retry %d", o.Attempt)
			if o.Status == state.OpenClaimed {
				if c := o.Cancelled; c != nil {
					return nil, errkind.Usagef("%s is already cancelled, by %s: its runner stops it when it next looks", key, c.By)
				}
				what = fmt.Sprintf("running attempt %d", o.Attempt) // the commit carries its marker (syncMarks)
				if o.Plan != nil && o.Plan.Started.IsZero() {
					what = fmt.Sprintf("planned job, attempt %d (not started)", o.Attempt)
				}
			}
		}
		if o := st.Open[key]; o == nil || o.Status == state.OpenRetry {
			// The run's approval request is withdrawn with it (a released
			// dead letter waits for both).
			for sid, a := range st.Approvals {
				if a.Key == key {
					ev.ScheduleID, ev.Slot, ev.PR = sid, a.Slot, a.PR
					what = strings.TrimPrefix(what+" and approval request ("+a.Status+")", " and ")
				}
			}
		}
		if what == "" {
			return nil, &errkind.Error{Kind: errkind.ErrUsage, Err: fmt.Errorf("nothing pending or running for %q in this checkout's ledger: cancel takes the key or run id of a waiting retry, "+
				"an approval request or a running attempt (see `astra schedules next`, `astra approvals list`, `astra tasks list`)", ref),
				Hint: "If the run started after this checkout was last pulled, pull first (git pull): cancel judges the ledger it has."}
		}
		sc := r.cfg.Schedule(ev.ScheduleID)
		if err := s.permit(ctx, model.VerbCancel, key, id, sc); err != nil {
			return nil, err
		}
		if sc != nil {
			ev.Actor, ev.Tenant, ev.Tool, ev.Tier = sc.Actor, sc.Tenant, sc.TargetTool, int(sc.SafetyTier)
		}
		d, _ := json.Marshal(map[string]string{"reason": reason, "withdrawn": what})
		ev.Detail = d
		pr = ev.PR
		return []*ledger.Event{ev}, nil
	})
	if err == nil && pr != 0 && !r.opts.DryRun && !r.opts.NoPush {
		// The reason is a person's words: shown as written, it cannot
		// mention, link or format (package markdown).
		r.closeWithdrawn(ctx, rep, pr, fmt.Sprintf("astra: %s was cancelled by %s: %s. This request is withdrawn; merging it approves nothing.",
			markdown.Code(key), markdown.Text(by(id)), markdown.Text(r.opts.Redact.String(reason))))
	}
	return rep, key, err
}

// closeWithdrawn closes the approval pull request of a request a person
// withdrew, once the decision is pushed. Left open, it would look like a
// request still waiting; a failure is a warning, as the merge of a
// withdrawn request approves nothing anyway.
func (r *Runner) closeWithdrawn(ctx context.Context, rep *Report, pr int, comment string) {
	var err error
	if r.forge == nil {
		err = errors.New("GitHub is not configured here (GITHUB_TOKEN and GITHUB_REPOSITORY)")
	} else {
		err = r.forge.ClosePullRequest(ctx, pr, r.opts.Redact.String(comment))
	}
	if err != nil && !errors.Is(err, forge.ErrMerged) {
		rep.Warnings = append(rep.Warnings, r.opts.Redact.String(fmt.Sprintf("pull request #%d of the withdrawn request is still open (%v): close it", pr, err)))
	}
}
