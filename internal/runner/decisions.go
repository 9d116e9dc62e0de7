package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerops"
	"github.com/astra-gitops/astra/internal/memory"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

// Decisions a human takes outside a run. Each names who takes it (an
// identity the CLI resolved: GitHub's in CI, a mapped git email locally)
// and is checked against the policies' permissions for its verb; what is
// allowed is recorded with who did it, what is not is recorded as
// action.refused with who, what and why. Both are committed and pushed
// like a run's events, so every runner sees them.

// refusal is a decision the policies do not allow: its event is recorded
// before the error is returned.
type refusal struct {
	ev  *ledger.Event
	err error
}

func (r *refusal) Error() string        { return r.err.Error() }
func (r *refusal) Unwrap() error        { return r.err }
func (r *refusal) event() *ledger.Event { return r.ev }

// verbPhrases say a permission's verb in words.
var verbPhrases = map[string]string{
	model.VerbDeadLetterRetry: "release the dead letters of",
	model.VerbMemoryPurge:     "purge the memory of",
	model.VerbRollback:        "roll back",
	model.VerbInitForce:       "overwrite the setup of",
	model.VerbCorrectClock:    "void",
	model.VerbTrustResume:     "resume",
}

// refuse builds the refusal of verb on target by id; sc is the schedule
// it concerns, nil when none.
func refuse(verb, target string, id identity.Identity, why string, sc *model.Schedule) *refusal {
	d, _ := json.Marshal(map[string]string{"identity": id.String(), "source": id.Source, "target": target})
	who := id.Login
	if who == "" {
		who = "unknown"
	}
	act := verbPhrases[verb]
	if act == "" {
		act = verb
	}
	msg := fmt.Sprintf("%s may not %s %s: %s", id, act, target, why)
	if id.Login == "" {
		msg = fmt.Sprintf("refusing to %s %s: %s", act, target, why)
	}
	ev := &ledger.Event{Event: ledger.ActionRefused, Status: ledger.StatusRefused, Reason: verb, By: who, Error: why, Detail: d}
	if sc != nil {
		ev.ScheduleID, ev.Actor, ev.Tenant, ev.Tool, ev.Tier = sc.ID, sc.Actor, sc.Tenant, sc.TargetTool, int(sc.SafetyTier)
	}
	return &refusal{ev: ev, err: errkind.Refusedf("%s; nothing was done (recorded)", msg)}
}

// Refuse records that id was not allowed to take verb on target (sc,
// when it is a schedule), for a refusal decided before astra could ask
// the policies (an identity that cannot be established). Nothing is
// recorded in a dry run.
func (r *Runner) Refuse(ctx context.Context, verb, target string, id identity.Identity, why string, sc *model.Schedule) error {
	_, err := r.record(ctx, verb, func(*session) ([]*ledger.Event, error) {
		return nil, refuse(verb, target, id, why, sc)
	})
	return err
}

// permit asks the policies whether id may take verb (on sc, when the verb
// concerns one schedule); nil means yes. A team GitHub could not answer
// for is an outage, returned as it is: nothing is refused or recorded.
func (s *session) permit(ctx context.Context, verb, target string, id identity.Identity, sc *model.Schedule) error {
	d := s.authorize(ctx, verb, id, sc)
	switch {
	case d.Allowed:
		return nil
	case d.Undecided():
		return d.Err
	}
	return refuse(verb, target, id, d.Reason, sc)
}

// by is how a decision names its author in the ledger.
func by(id identity.Identity) string {
	if !id.Verified {
		return id.Login + " (unverified)"
	}
	return id.Login
}

// Reject records the rejection of sc's open approval request (the slot
// never runs) and removes its token file, if any.
func (r *Runner) Reject(ctx context.Context, sc *model.Schedule, id identity.Identity, reason string) (*Report, error) {
	return r.record(ctx, "reject", func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbReject, sc.Name, id, sc); err != nil {
			return nil, err
		}
		req := s.state().Approvals[sc.ID]
		if req == nil {
			return nil, errkind.Usagef("%s has no pending approval request", sc.Name)
		}
		s.dropToken(sc.ID)
		ev := s.approvalEvent(ledger.ApprovalRejected, ledger.StatusRejected, sc, req)
		ev.By, ev.PR, ev.Comment = by(id), req.PR, s.r.opts.Redact.String(reason)
		return []*ledger.Event{ev}, nil
	})
}

// ReleaseDeadLetters releases the dead letters of a schedule (by id) or
// one of them (by idempotency key): the next run-due retries them. It
// returns the keys released.
func (r *Runner) ReleaseDeadLetters(ctx context.Context, ref string, id identity.Identity) (*Report, []string, error) {
	var released []string
	rep, err := r.record(ctx, "dead-letter retry", func(s *session) ([]*ledger.Event, error) {
		var evs []*ledger.Event
		for key, d := range s.state().DeadLetters {
			if key != ref && d.ScheduleID != ref {
				continue
			}
			sc := r.cfg.Schedule(d.ScheduleID)
			if err := s.permit(ctx, model.VerbDeadLetterRetry, key, id, sc); err != nil {
				return nil, err
			}
			ev := &ledger.Event{Event: ledger.DeadLetterReleased, ScheduleID: d.ScheduleID, Slot: d.Slot, IdempotencyKey: key,
				Status: ledger.StatusReleased, TraceID: d.TraceID, Mode: d.Mode, By: by(id)}
			if sc != nil {
				ev.Actor, ev.Tenant, ev.Tool, ev.Tier = sc.Actor, sc.Tenant, sc.TargetTool, int(sc.SafetyTier)
			}
			evs = append(evs, ev)
			released = append(released, key)
		}
		if len(evs) == 0 {
			return nil, errkind.Usagef("no dead letter matches %q (see `astra dead-letter list`)", ref)
		}
		sort.Slice(evs, func(i, j int) bool { return evs[i].IdempotencyKey < evs[j].IdempotencyKey })
		sort.Strings(released)
		return evs, nil
	})
	return rep, released, err
}

// ResumeBound is what a budget resume lifts a pause to: Extra dollars more
// than the period's spend for the rest of the period (a decimal such as
// "2.00"), or no limit until Until (at most to the period's end), never
// both; Reason says why, recorded with who.
type ResumeBound struct {
	Extra  string
	Until  time.Time
	Reason string
}

// Resumed is one period a resume lifted, and its bound.
type Resumed struct {
	Period  string
	Ceiling money.USD // the period's limit for the rest of it; 0 with Until
	Until   time.Time
}

// Resume lifts the global-budget pauses (the day's, the month's, or both)
// to the bound b, and returns the periods it lifted. A resume without a
// bound is refused: it would lift the ceiling for the rest of the period.
// The policy's limits stay: the next period starts under them again.
func (r *Runner) Resume(ctx context.Context, id identity.Identity, b ResumeBound) (*Report, []Resumed, error) {
	var extra money.USD
	switch {
	case strings.TrimSpace(b.Reason) == "":
		return nil, nil, errkind.Usagef("say why the budget is resumed (--reason): it is recorded with who resumed it")
	case (b.Extra == "") == b.Until.IsZero():
		return nil, nil, errkind.Usagef("a resume needs a bound: --extra AMOUNT (spend that much more this period) or --until TIME (no limit until then), one of them")
	case b.Extra != "":
		var err error
		if extra, err = money.Parse(b.Extra); err != nil || extra <= 0 {
			return nil, nil, errkind.Usagef("--extra %q is not an amount of dollars above 0, such as 2.00", b.Extra)
		}
	}
	var lifted []Resumed
	rep, err := r.record(ctx, "budget resume", func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbResume, "the global budget", id, nil); err != nil {
			return nil, err
		}
		if !b.Until.IsZero() && !b.Until.After(s.now) {
			return nil, errkind.Usagef("--until %s is not after now (%s)", b.Until.UTC().Format(time.RFC3339), s.now.UTC().Format(time.RFC3339))
		}
		st := s.state()
		why := s.r.opts.Redact.String(b.Reason)
		var evs []*ledger.Event
		for _, period := range []string{"day", "month"} {
			if st.Pauses[period] == nil {
				continue
			}
			spent := st.Spent(period)
			ev := &ledger.Event{Event: ledger.BudgetResumed, Status: ledger.StatusResumed, Period: period, By: by(id), Spent: spent}
			res := Resumed{Period: period}
			if extra > 0 {
				ev.Limit = spent.Add(extra)
				res.Ceiling = ev.Limit
				ev.Error = fmt.Sprintf("up to %s for the rest of the %s (%s spent + %s): %s", ev.Limit.Dollars(), period, spent.Dollars(), extra.Dollars(), why)
			} else {
				ev.ExpiresAt = b.Until.UTC().Truncate(time.Second)
				res.Until = ev.ExpiresAt
				ev.Error = fmt.Sprintf("no limit until %s, at most to the end of the %s: %s", ev.ExpiresAt.Format(time.RFC3339), period, why)
			}
			evs, lifted = append(evs, ev), append(lifted, res)
		}
		if len(evs) == 0 {
			return nil, errkind.Usagef("the global budget is not paused")
		}
		return evs, nil
	})
	return rep, lifted, err
}

// PurgeMemory quarantines the memory written by a schedule or a run
// (n entries, as counted by the caller from memory.Select).
func (r *Runner) PurgeMemory(ctx context.Context, task string, id identity.Identity, n int) (*Report, error) {
	return r.record(ctx, "memory purge", func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbMemoryPurge, task, id, r.cfg.Schedule(task)); err != nil {
			return nil, err
		}
		return []*ledger.Event{memory.Purged(task, by(id), n)}, nil
	})
}

// RefuseTrigger records a trigger that was refused before anything ran
// (a missing, wrong or replayed signature).
func (r *Runner) RefuseTrigger(ctx context.Context, event, reason, why string) (*Report, error) {
	return r.record(ctx, "trigger", func(*session) ([]*ledger.Event, error) {
		return []*ledger.Event{{Event: ledger.TriggerRefused, Status: ledger.StatusRefused, Reason: reason, Error: why + " (event " + event + ")"}}, nil
	})
}

// record appends the events build returns (it sees the replayed state to
// check the request against), then commits and pushes them like a run. A
// refusal's event is recorded too, and its error returned.
func (r *Runner) record(ctx context.Context, command string, build func(s *session) ([]*ledger.Event, error)) (rep *Report, err error) {
	release, err := r.recoverLeftovers(ctx, command)
	defer release()
	if err != nil {
		return nil, err
	}
	defer func() { r.finishReport(rep) }()
	if err := r.pullState(ctx); err != nil {
		return nil, err
	}
	s, err := r.open(ctx, command)
	if err != nil {
		return nil, err
	}
	evs, err := build(s)
	var ref *refusal
	if errors.As(err, &ref) {
		if r.opts.DryRun {
			return s.report, err
		}
		if rerr := s.record(ref.event()); rerr != nil {
			return nil, errkind.Default(fmt.Errorf("%w (and recording the refusal failed: %w)", err, rerr), errkind.ErrInfra)
		}
		if ferr := s.finish(ctx); ferr != nil {
			return s.report, errkind.Default(fmt.Errorf("%w (and pushing the refusal failed: %w)", err, ferr), errkind.ErrInfra)
		}
		return s.report, err
	}
	if err != nil {
		return nil, errkind.Default(err, errkind.ErrInfra)
	}
	if err := s.j.Record(evs...); err != nil {
		return nil, errkind.Default(err, errkind.ErrInfra)
	}
	return s.report, errkind.Default(s.finish(ctx), errkind.ErrInfra)
}

// CorrectClock records the correction of a wrong clock: what was decided
// after after is voided (state.Correction says what that means), so the
// schedules resume at their next real slot and no slot runs twice. The
// correction is dated by this run's clock, which is held to a trusted time
// like any run's; reason says why, and is recorded with who decided it.
func (r *Runner) CorrectClock(ctx context.Context, after time.Time, reason string, id identity.Identity) (*Report, *state.Correction, error) {
	var c *state.Correction
	rep, err := r.record(ctx, "ledger correct-clock", func(s *session) ([]*ledger.Event, error) {
		if err := s.permit(ctx, model.VerbCorrectClock, "the decisions made after "+after.UTC().Format(time.RFC3339), id, nil); err != nil {
			return nil, err
		}
		var err error
		if c, err = ledgerops.CorrectClock(r.store(), s.state(), after, s.now, reason); err != nil {
			return nil, err
		}
		d, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		return []*ledger.Event{{Event: ledger.ClockCorrected, Status: ledger.StatusCorrected, By: by(id), Detail: d,
			Error: fmt.Sprintf("what was decided after %s is void: %s", after.UTC().Format(time.RFC3339), reason)}}, nil
	})
	return rep, c, err
}
