package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/astra-gitops/astra/internal/executor"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
)

// execute runs the tasks, up to MaxParallel at once, in order of priority;
// tasks sharing a lane never overlap. Everything a task records goes
// through s.mu.
func (s *session) execute(ctx context.Context, tasks []*task) {
	sem := make(chan struct{}, s.r.opts.MaxParallel)
	lanes := map[string]*sync.Mutex{}
	var wg sync.WaitGroup
	for _, t := range tasks {
		var lane *sync.Mutex
		if l := t.sched.Lane; l != "" {
			if lanes[l] == nil {
				lanes[l] = &sync.Mutex{}
			}
			lane = lanes[l]
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if lane != nil {
				lane.Lock()
				defer lane.Unlock()
			}
			s.runTask(ctx, t)
		}()
	}
	wg.Wait()
}

// runTask executes one task and records its outcome, then any chained step.
func (s *session) runTask(ctx context.Context, t *task) {
	r := s.r
	if r.opts.DryRun {
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
	req := r.request(t)
	req.OnWarning = func(w executor.Warning) {
		s.mu.Lock()
		defer s.mu.Unlock()
		ev := t.event(ledger.BudgetWarning, ledger.StatusWarning)
		ev.Usage, ev.Threshold = w.Snapshot, w.Fraction
		ev.Error = fmt.Sprintf("run reached %.0f%% of its %s budget", w.Fraction*100, w.Limit)
		_ = s.j.Record(ev) // a failed append surfaces with the outcome's
	}
	res := r.exec.Run(ctx, req)

	s.mu.Lock()
	defer s.mu.Unlock()
	t.outcome.setResult(res, r.tail)
	if err := s.recordResult(t, res); err != nil {
		s.report.Errors = append(s.report.Errors, err.Error())
	}
	s.progress(t)
	if res.Status == executor.StatusOK {
		s.route(ctx, t, res)
	}
	s.checkGlobalBudget()
}

// recordResult writes a finished run's outcome, and its retry or dead
// letter when it failed. Called with s.mu held.
func (s *session) recordResult(t *task, res executor.Result) error {
	if res.Status == executor.StatusOK {
		ev := t.event(ledger.RunCompleted, ledger.StatusOK)
		ev.Usage, ev.Output = res.Usage, s.r.tail(res.Output)
		t.outcome.Action = ActionRan
		return s.j.Record(ev)
	}
	ev := t.event(ledger.RunFailed, ledger.StatusFailed)
	ev.Reason, ev.Error, ev.Usage, ev.Output = res.Reason, res.Error, res.Usage, s.r.tail(res.Output)
	if res.Exceeded != "" {
		ev.Error = fmt.Sprintf("%s (%s limit)", res.Error, res.Exceeded)
	}
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionFailed, res.Reason, ev.Error
	evs := []*ledger.Event{ev}
	if res.Reason == ledger.ReasonBudgetExceeded {
		// Retrying a run that blew its budget would spend it again: it goes
		// straight to the dead letter, to be released by a human.
		dl := t.event(ledger.RunDeadLettered, ledger.StatusDeadLetter)
		dl.Attempt, dl.Error = t.attempt, ev.Error+"; not retried: raise the budget, then `astra dead-letter retry`"
		t.outcome.DeadLettered = true
		evs = append(evs, dl)
	} else {
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
// pauses at the limit (seed 002 GlobalBudgetGuard). Called with s.mu held.
func (s *session) checkGlobalBudget() {
	st := s.state()
	b := s.r.cfg.Policies.Budget
	for _, p := range []struct {
		period       string
		spent, limit float64
	}{{"day", st.Spend.DayUSD, b.DailyLimitUSD}, {"month", st.Spend.MonthUSD, b.MonthlyLimitUSD}} {
		if p.limit <= 0 {
			continue
		}
		frac := p.spent / p.limit
		for _, th := range append(append([]float64(nil), b.AlertThresholds...), 1) {
			if frac < th || st.Alerted[state.AlertKey(p.period, s.now, th)] {
				continue
			}
			kind, status := ledger.BudgetWarning, ledger.StatusWarning
			if th >= 1 {
				kind, status = ledger.BudgetExceeded, ledger.StatusExceeded
			}
			ev := &ledger.Event{Event: kind, Status: status, Period: p.period, Threshold: th, SpentUSD: round(p.spent), LimitUSD: p.limit,
				Error: fmt.Sprintf("%s spend $%.2f is %.0f%% of the $%.2f limit", p.period, p.spent, frac*100, p.limit)}
			evs := []*ledger.Event{ev}
			if th >= 1 && b.OnLimitReached != model.AlertOnly && st.Pause == nil && !st.ResumedIn(p.period) {
				evs = append(evs, &ledger.Event{Event: ledger.BudgetPaused, Status: b.OnLimitReached, Period: p.period,
					SpentUSD: round(p.spent), LimitUSD: p.limit,
					Error: fmt.Sprintf("%s: paused until the next %s or `astra budget resume`", b.OnLimitReached, p.period)})
			}
			if err := s.j.Record(evs...); err != nil {
				s.report.Errors = append(s.report.Errors, err.Error())
				return
			}
			s.report.Alerts = append(s.report.Alerts, ev.Error)
		}
	}
}

func round(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }

// progress reports a finished task on the progress writer, if any.
func (s *session) progress(t *task) {
	if w := s.r.opts.Progress; w != nil {
		fmt.Fprintf(w, "astra: %s %s %s\n", t.outcome.Action, t.sched.Name, t.outcome.Detail)
	}
}

// setResult copies an executor result into an outcome.
func (o *Outcome) setResult(res executor.Result, tail func(string) string) {
	o.Usage, o.Output, o.WouldRun = res.Usage, tail(res.Output), res.WouldRun
	o.Reason, o.Detail = res.Reason, res.Error
}
