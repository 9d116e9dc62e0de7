package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// TriggerRequest is one `astra trigger`.
type TriggerRequest struct {
	Event   string
	Payload []byte // the event's JSON, handed to tools as ASTRA_EVENT
	Key     string // idempotency key; default a hash of event and payload
	By      identity.Identity
	// Signature is the id of the timestamped signature that authenticated
	// the request ("" when none): seen once, a replay of it inside its
	// tolerance window is refused.
	Signature        string
	SignatureExpires time.Time
	// GitHubEvent is the X-GitHub-Event a relayed GitHub delivery's
	// signature was checked with, recorded with the trigger.
	GitHubEvent string
}

// Trigger is `astra trigger <event>`: every schedule with on_event: event
// runs now, through every gate. A relayed event delivered twice runs once
// (same key). A caller authenticated by a JWT acts within its mapped
// actor's scopes: a schedule whose tool they do not grant is skipped.
func (r *Runner) Trigger(ctx context.Context, req TriggerRequest) (*Report, error) {
	key := req.Key
	if key == "" {
		sum := sha256.Sum256(append([]byte(req.Event+"\x00"), req.Payload...))
		key = hex.EncodeToString(sum[:8])
	}
	var scheds []*model.Schedule
	for _, sc := range r.cfg.Schedules {
		if sc.OnEvent == req.Event && sc.Enabled && r.opts.Filter.Match(sc) {
			scheds = append(scheds, sc)
		}
	}
	if len(scheds) == 0 {
		return nil, errkind.Usagef("no enabled schedule has on_event: %s", req.Event)
	}
	if err := r.Permit(ctx, model.VerbTrigger, req.Event, req.By, nil); err != nil {
		return nil, err
	}
	rep, err := r.run(ctx, "trigger", func(s *session) ([]*task, error) {
		if req.Signature != "" {
			// Seen is enough: a signature that verified is inside its
			// window by the machine's clock, whatever clock dates the run.
			if _, seen := s.state().Signatures[req.Signature]; seen {
				why := "this signature was already used: a replayed request is refused"
				if err := s.record(&ledger.Event{Event: ledger.TriggerRefused, Status: ledger.StatusRefused, Reason: "replay", Error: why + " (event " + req.Event + ")"}); err != nil {
					return nil, err
				}
				return nil, errkind.Refusedf("trigger %s refused: %s; nothing ran (recorded)", req.Event, why)
			}
		}
		if id := req.By.TokenID; id != "" {
			if _, seen := s.state().Signatures[id]; seen {
				why := "this JWT was already used (its jti): a token triggers once"
				if err := s.record(&ledger.Event{Event: ledger.TriggerRefused, Status: ledger.StatusRefused, Reason: "replay", By: by(req.By),
					Error: why + " (event " + req.Event + ")"}); err != nil {
					return nil, err
				}
				return nil, errkind.Refusedf("trigger %s refused: %s; nothing ran (recorded)", req.Event, why)
			}
		}
		d, _ := json.Marshal(state.TriggerDetail{Key: key, Signature: req.Signature, Identity: req.By.String(), GitHubEvent: req.GitHubEvent,
			JWT: req.By.TokenID, JWTExpires: req.By.TokenExpires})
		if err := s.record(&ledger.Event{Event: ledger.TriggerAccepted, Status: ledger.StatusOK, Reason: req.Event, By: by(req.By),
			ExpiresAt: req.SignatureExpires, Detail: d}); err != nil {
			return nil, err
		}
		var tasks []*task
		for _, sc := range scheds {
			t := s.newTask(plan.KindEvent, sc, s.now, sc.ID+"@event:"+req.Event+":"+key, ledger.ModeEvent, 1, "")
			t.eventData, t.by = string(req.Payload), by(req.By)
			if miss := s.callerScopes(req.By, t.tool); miss != "" {
				if err := s.skip(t, ledger.ReasonScopeDenied, miss); err != nil {
					return nil, err
				}
				continue
			}
			more, err := s.decideOne(ctx, t)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, more...)
		}
		return tasks, nil
	})
	if err == nil && rep != nil && !rep.DryRun {
		if rl := rep.RateLimited(); rl != nil {
			// The caller may send the same request again once the limit
			// resets: its key is not used up by the skip.
			err = errkind.RateLimitedf("trigger %s rate limited: actor %s may start %d runs per %s, %d left; try again from %s (in %s)",
				req.Event, rl.Actor, rl.Limit, rl.Window, rl.Remaining, rl.ResetAt.UTC().Format(time.RFC3339), rl.ResetAt.Sub(rep.Now).Round(time.Second))
		}
	}
	return rep, err
}

// callerScopes says what a JWT caller's actor lacks to trigger tool, ""
// when it may (or the caller is a person, whom permissions already
// allowed).
func (s *session) callerScopes(id identity.Identity, tool *model.Tool) string {
	if id.Source != identity.SourceJWT || tool == nil {
		return ""
	}
	a := s.r.cfg.Policies.Actor(id.Actor)
	if a == nil {
		return fmt.Sprintf("the caller's actor %q is not defined in policies", id.Actor)
	}
	if miss := model.Missing(a.Scopes, tool.Capabilities); len(miss) > 0 {
		return fmt.Sprintf("the caller (%s, actor %s) lacks scope for %s", id, id.Actor, strings.Join(miss, ", "))
	}
	return ""
}

// Permit asks the policies whether id may take verb (on sc, when the verb
// concerns one schedule); a refusal is recorded (outside dry runs) and
// returned. A team GitHub could not answer for is an outage (exit 3),
// not a refusal: nothing is recorded.
func (r *Runner) Permit(ctx context.Context, verb, target string, id identity.Identity, sc *model.Schedule) error {
	d := r.authorize(ctx, verb, id, sc)
	switch {
	case d.Allowed:
		return nil
	case d.Undecided():
		return fmt.Errorf("%w; nothing was done", d.Err)
	}
	return r.Refuse(ctx, verb, target, id, d.Reason, sc)
}
