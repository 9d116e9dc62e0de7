package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/gate"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/astra-gitops/astra/internal/telemetry"
)

// execute runs the tasks, up to MaxParallel at once, in the order they
// were decided (priority first). Tasks sharing a lane run one after
// another in that order, never at the same time; other runners see a
// lane's claims and leave its schedules alone meanwhile (see decideDue).
// Everything a task records goes through s.mu.
func (s *session) execute(ctx context.Context, tasks []*task) {
	if s.fan != nil {
		s.fan.dispatch() // astra plan: the claims are out; the matrix's jobs run them
		return
	}
	var queues [][]*task
	lanes := map[string]int{}
	for _, t := range tasks {
		if l := t.sched.Lane; l != "" {
			if i, ok := lanes[l]; ok {
				queues[i] = append(queues[i], t)
				continue
			}
			lanes[l] = len(queues)
		}
		queues = append(queues, []*task{t})
	}
	sem := make(chan struct{}, s.r.opts.MaxParallel)
	var wg sync.WaitGroup
	for _, q := range queues {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, t := range q {
				s.runTask(ctx, t)
			}
		}()
	}
	wg.Wait()
}

// runTask executes one task and records its outcome, then any chained step.
func (s *session) runTask(ctx context.Context, t *task) {
	r := s.r
	ctx, span := s.startSpan(ctx, t)
	defer func() { s.endSpan(span, t) }()
	if r.opts.DryRun {
		s.mu.Lock()
		s.starting(t)
		s.mu.Unlock()
		res := r.dryRun(ctx, t)
		s.mu.Lock()
		defer s.mu.Unlock()
		t.outcome.setResult(res, r.tail)
		t.outcome.Action = ActionWouldRun
		if res.Status == executor.StatusDryRun {
			t.outcome.Action = ActionDryRun
		}
		s.progress(t)
		if t.sched.ResultRoute.Type == model.RouteChainNext {
			t.outcome.Chain = t.sched.ResultRoute.Schedule
		}
		return
	}
	// Admission again as the run starts: what earlier runs of the batch
	// spent, and the caps of every open claim (its own included), count.
	// An approved run was admitted when claimed; a human chose it, so it
	// goes ahead.
	s.mu.Lock()
	if d, stopped := gate.Stopped(s.state()); stopped {
		// A claim planned, or a run approved, before the stop.
		if err := s.skip(t, d.Reason, d.Detail); err != nil {
			s.report.Errors = append(s.report.Errors, err.Error())
		}
		s.progress(t)
		s.mu.Unlock()
		return
	}
	if t.grant == nil {
		if d, refused := gate.Admit(gate.Input{Schedule: t.sched, Policies: &r.cfg.Policies, State: s.state(), Now: s.now, Claimed: true}); refused {
			if err := s.skip(t, d.Reason, d.Detail); err != nil {
				s.report.Errors = append(s.report.Errors, err.Error())
			}
			s.progress(t)
			s.mu.Unlock()
			return
		}
	}
	s.starting(t)
	s.mu.Unlock()

	req := r.request(t)
	req.OnWarning = func(w executor.Warning) {
		s.mu.Lock()
		defer s.mu.Unlock()
		ev := t.event(ledger.BudgetWarning, ledger.StatusWarning)
		ev.Usage, ev.Threshold = w.Snapshot, w.Fraction
		ev.Error = fmt.Sprintf("run reached %.0f%% of its %s budget", w.Fraction*100, w.Limit)
		_ = s.j.Record(ev) // a failed append surfaces with the outcome's
	}
	w := s.watchWrites(t)
	tctx, stopWatch := s.watchCancel(ctx, t)
	res := r.exec.Run(tctx, req)
	if m := stopWatch(); m != nil && res.Status != executor.StatusOK {
		res = stopped(res, m)
	}
	s.sortWrites(t, w, res)

	s.mu.Lock()
	defer s.mu.Unlock()
	t.outcome.setResult(res, r.tail)
	if err := s.recordResult(t, res); err != nil {
		s.report.Errors = append(s.report.Errors, err.Error())
	} else if res.Reported != nil {
		s.alert(ctx, "budget:anomaly:"+t.runID(), fmt.Sprintf("%s: %s", t.sched.Name, res.Error),
			&ledger.Event{Event: ledger.BudgetWarning, ScheduleID: t.sched.ID})
	}
	s.pushOutcome(ctx, t)
	s.progress(t)
	if res.Status == executor.StatusOK {
		s.route(ctx, t, res)
	}
	s.checkGlobalBudget(ctx)
}

// startSpan starts t's span: in t's ledger trace, with the span id of the
// TRACEPARENT its tool receives; a chained step's parent is the step
// before it, and a task in another trace than the run links to the run.
func (s *session) startSpan(ctx context.Context, t *task) (context.Context, *telemetry.Span) {
	_, spanID, _ := telemetry.ParseTraceParent(traceParent(t.traceID, t.runID()))
	sc := t.sched
	return s.r.opts.Tracer.Start(ctx, "astra task "+sc.ID, telemetry.TraceID(t.traceID), telemetry.SpanID(spanID),
		telemetry.Attrs(telemetry.AttrScheduleID, sc.ID, telemetry.AttrScheduleName, sc.Name, telemetry.AttrTenant, sc.Tenant,
			telemetry.AttrSlot, t.slot, telemetry.AttrIdempotencyKey, t.key, telemetry.AttrRunID, t.runID(),
			telemetry.AttrAttempt, t.attempt, telemetry.AttrMode, t.mode, telemetry.AttrTool, sc.TargetTool,
			telemetry.AttrTier, int(sc.SafetyTier), telemetry.AttrAutonomy, sc.Autonomy.Short(), telemetry.AttrActor, sc.Actor,
			telemetry.AttrDryRun, s.r.opts.DryRun))
}

// endSpan ends t's span with what happened to it.
func (s *session) endSpan(span *telemetry.Span, t *task) {
	s.mu.Lock()
	o := *t.outcome
	s.mu.Unlock()
	span.SetAttrs(telemetry.AttrAction, o.Action, telemetry.AttrReason, o.Reason,
		telemetry.AttrUsageTokens, o.Usage.Tokens, telemetry.AttrUsageCostUSD, o.Usage.Cost.Float(),
		telemetry.AttrUsageToolCalls, o.Usage.ToolCalls)
	var err error
	if o.Action == ActionFailed {
		err = telemetry.Failure(o.Reason, o.Detail)
	}
	span.End(err)
}

// recordResult writes a finished run's outcome, and its retry or dead
// letter when it failed. Called with s.mu held.
func (s *session) recordResult(t *task, res executor.Result) error {
	if res.Status == executor.StatusOK {
		ev := t.event(ledger.RunCompleted, ledger.StatusOK)
		ev.Usage, ev.Output, ev.Detail = res.Usage, s.r.tail(res.Output), s.writesDetail(t)
		t.outcome.Action = ActionRan
		return s.j.Record(ev)
	}
	ev := t.event(ledger.RunFailed, ledger.StatusFailed)
	ev.Reason, ev.Error, ev.Usage, ev.Output, ev.Detail = res.Reason, res.Error, res.Usage, s.r.tail(res.Output), s.writesDetail(t)
	if res.Exceeded != "" {
		ev.Error = fmt.Sprintf("%s (%s limit)", res.Error, res.Exceeded)
	}
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionFailed, res.Reason, ev.Error
	evs := []*ledger.Event{ev}
	if res.Exceeded != "" {
		// Every per-run limit (tokens, cost, tool calls, wall clock) ends
		// the same way: retrying would spend it again, so the slot goes
		// straight to the dead letter, to be released by a human.
		dl := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
		dl.Attempt, dl.Error = t.attempt, ev.Error+"; not retried: raise the budget, then `astra dead-letter retry`"
		t.outcome.DeadLettered = true
		evs = append(evs, dl)
		if res.Reported != nil {
			// Usage past the run's bounds: the run recorded its bounds; what
			// the tool reported is kept here, where no sum counts it.
			a := t.event(ledger.BudgetWarning, ledger.StatusWarning)
			a.Reason, a.Usage, a.Error = ledger.ReasonUsageAnomaly, *res.Reported, res.Error
			evs = append(evs, a)
			s.report.Alerts = append(s.report.Alerts, fmt.Sprintf("%s: %s", t.sched.Name, res.Error))
		}
	} else if o := s.state().Open[t.key]; res.Reason != ledger.ReasonCancelled && (o == nil || o.Cancelled == nil) {
		evs = append(evs, s.retryOrDeadLetter(t, ev.Error)...)
	}
	return s.j.Record(evs...)
}

// chain runs the schedule named by chain_next right after t, through every
// gate, with t's output as context when asked. Called with s.mu held.
func (s *session) chain(ctx context.Context, t *task, res executor.Result) {
	rr := t.sched.ResultRoute
	next := s.r.cfg.Schedule(rr.Schedule)
	if next == nil || t.depth+1 >= model.MaxChainDepth {
		return // validate rejects both; a guard against a stale config
	}
	c := s.newTask(plan.KindChain, next, t.slot, ledger.ChainKey(t.key, next.ID), t.mode, 1, t.traceID)
	c.depth = t.depth + 1
	c.inherited = t.toolLists(&s.r.cfg.Policies) // a chain never widens what its first step may use
	c.toolCalls = t.toolCalls + res.Usage.ToolCalls
	if rr.ContextFromResult {
		c.previous = res.Output
	}
	t.outcome.Chain = next.Name
	ok, err := s.gate(ctx, c)
	if err != nil {
		s.report.Errors = append(s.report.Errors, err.Error())
		return
	}
	if !ok {
		return
	}
	s.mu.Unlock()
	s.runTask(ctx, c)
	s.mu.Lock()
}

// checkGlobalBudget raises the global budget's alerts once per period and
// pauses each period that reached its limit: the day and the month
// independently, so both are recorded when both are crossed, and a month
// pause outlives the day. Called with s.mu held, after every run.
func (s *session) checkGlobalBudget(ctx context.Context) {
	st := s.state()
	b := s.r.cfg.Policies.Budget
	for _, p := range []struct {
		period string
		limit  money.USD
	}{{"day", b.DailyLimit}, {"month", b.MonthlyLimit}} {
		if p.limit <= 0 {
			continue
		}
		spent := st.Spent(p.period)
		for _, th := range append(append([]float64(nil), b.AlertThresholds...), 1) {
			reached := spent.Float() >= th*p.limit.Float()
			if th >= 1 {
				reached = spent >= p.limit // exact: 100% is the limit itself
			}
			if !reached || st.Alerted[state.AlertKey(p.period, s.now, th)] {
				continue
			}
			kind, status := ledger.BudgetWarning, ledger.StatusWarning
			if th >= 1 {
				kind, status = ledger.BudgetExceeded, ledger.StatusExceeded
			}
			ev := &ledger.Event{Event: kind, Status: status, Period: p.period, Threshold: th, Spent: spent, Limit: p.limit,
				Error: fmt.Sprintf("%s spend %s is %.0f%% of the %s limit", p.period, spent.Dollars(), spent.Float()/p.limit.Float()*100, p.limit.Dollars())}
			if err := s.j.Record(ev); err != nil {
				s.report.Errors = append(s.report.Errors, err.Error())
				return
			}
			s.report.Alerts = append(s.report.Alerts, ev.Error)
			s.alert(ctx, "budget:"+state.AlertKey(p.period, s.now, th), ev.Error, ev)
		}
		// The pause: at the policy's limit, or at the ceiling a resume set.
		limit, limited := st.Limit(p.period, p.limit)
		if !limited || spent < limit || b.OnLimitReached == model.AlertOnly || st.Pauses[p.period] != nil {
			continue
		}
		ev := &ledger.Event{Event: ledger.BudgetPaused, Status: b.OnLimitReached, Period: p.period, Spent: spent, Limit: limit,
			Error: fmt.Sprintf("%s: %s spend %s reached %s; paused until the next %s or `astra budget resume`", b.OnLimitReached, p.period, spent.Dollars(), limit.Dollars(), p.period)}
		if err := s.j.Record(ev); err != nil {
			s.report.Errors = append(s.report.Errors, err.Error())
			return
		}
		s.alert(ctx, "budget:paused:"+state.AlertKey(p.period, s.now, limit.Float()), ev.Error, ev)
	}
}

// progress reports a finished task, if anyone listens.
func (s *session) progress(t *task) {
	if p := s.r.opts.Progress; p != nil {
		p.End(t.outcome.Action, t.sched.Name, t.outcome.Detail)
	}
}

// starting reports a task that starts, if anyone listens; s.mu is held.
func (s *session) starting(t *task) {
	if p := s.r.opts.Progress; p != nil {
		p.Start(t.sched.Name)
	}
}

// setResult copies an executor result into an outcome.
func (o *Outcome) setResult(res executor.Result, tail func(string) string) {
	o.Usage, o.Output, o.WouldRun = res.Usage, tail(res.Output), res.WouldRun
	o.Reason, o.Detail = res.Reason, res.Error
}
