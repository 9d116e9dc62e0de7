package executor

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
)

// usagePrefix starts a usage line on a tool's stdout:
//
//	::astra-usage {"tokens":1200,"cost_usd":0.02,"tool_calls":1}
//	::astra-usage {"input_tokens":900,"output_tokens":300,"model":"gpt-4o"}
//
// Each line reports an increment; fields are optional. A line without
// cost_usd is priced from its tokens (model.Pricing); cost_usd, when the
// tool reports it, wins. An http tool reports the same object as "usage"
// in its response. A line that is not such an object (a negative or
// fractional count, a negative amount) is output like any other.
const usagePrefix = "::astra-usage "

// usageLine is one usage report. Counts too large for int64 and amounts
// beyond money.Max read as their bounds: a report too large to hold is
// still seen, never mistaken for output.
type usageLine struct {
	tokens, input, output, toolCalls int64
	cost                             money.USD
	hasTokens, hasCost               bool
	model                            string
}

// parseUsage reads the JSON of a usage line.
func parseUsage(b []byte) (usageLine, bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil || raw == nil {
		return usageLine{}, false
	}
	var l usageLine
	ok := true
	for key, dst := range map[string]*int64{"tokens": &l.tokens, "input_tokens": &l.input, "output_tokens": &l.output, "tool_calls": &l.toolCalls} {
		if v, present := raw[key]; present {
			*dst, ok = count(v)
			if !ok {
				return usageLine{}, false
			}
		}
	}
	_, l.hasTokens = raw["tokens"]
	if v, present := raw["cost_usd"]; present && string(v) != "null" {
		if l.cost, ok = amount(v); !ok {
			return usageLine{}, false
		}
		l.hasCost = true
	}
	if v, present := raw["model"]; present && json.Unmarshal(v, &l.model) != nil {
		return usageLine{}, false
	}
	return l, true
}

// count reads a whole, non-negative JSON number; beyond ledger.MaxCount
// (int64 included) it is MaxCount.
func count(v json.RawMessage) (int64, bool) {
	if string(v) == "null" {
		return 0, true
	}
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v { // a valid JSON value of digits only: a whole number, not negative
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil && !isRange(err) {
		return 0, false
	}
	if err != nil || n > ledger.MaxCount {
		return ledger.MaxCount, true
	}
	return n, true
}

// amount reads a non-negative JSON number of dollars; beyond money.Max it
// is money.Max.
func amount(v json.RawMessage) (money.USD, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	if u, err := money.ParseNumber(v); err == nil {
		return u, u >= 0
	}
	f, err := strconv.ParseFloat(string(v), 64)
	switch {
	case err != nil && !isRange(err), math.IsNaN(f), f < 0:
		return 0, false
	case f > money.Max.Float():
		return money.Max, true
	}
	u, err := money.FromFloat(f)
	return u, err == nil
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// bounds is the most a run records of each usage count under b: twice each
// limit, or ledger.MaxCount where there is none; for money twice
// max_cost_usd, so nothing for a tool declared free (max_cost_usd: 0). A
// tool is stopped at 100% of a limit, and what its last report adds past it
// was spent and is recorded, up to the bound. A report past a bound is an
// anomaly: the run stops, records the bound, and keeps the report as
// evidence (Result.Reported) that no sum counts.
func bounds(b model.TaskBudget) ledger.Usage {
	twice := func(limit int64) int64 {
		if limit <= 0 {
			return ledger.MaxCount
		}
		return ledger.AddCount(limit, limit)
	}
	return ledger.Usage{Tokens: twice(b.MaxTokens), Cost: b.MaxCost.Add(b.MaxCost), ToolCalls: twice(b.MaxToolCalls), WallClockMS: ledger.MaxCount}
}

// within is u with each count at most its bound.
func within(u, bound ledger.Usage) ledger.Usage {
	return ledger.Usage{Tokens: min(u.Tokens, bound.Tokens), Cost: min(u.Cost, bound.Cost),
		WallClockMS: min(u.WallClockMS, bound.WallClockMS), ToolCalls: min(u.ToolCalls, bound.ToolCalls)}
}

// guard enforces a run's budget as usage arrives.
// Sums saturate; once the tool is stopped, whatever it still reports or
// prints is ignored (a tool that ignores SIGTERM prints on for the kill
// grace).
type guard struct {
	mu        sync.Mutex
	budget    model.TaskBudget
	bound     ledger.Usage
	tool      string
	pricing   *model.Pricing
	usage     ledger.Usage // what was reported and counted, saturating
	reported  bool         // the tool reported tokens itself
	inBytes   int64        // input handed over, for the token estimate
	outBytes  int64
	warned    map[string]bool
	exceeded  string
	anomaly   bool // exceeded: a report went past its bound
	halted    bool // the tool is being stopped: nothing more counts
	stop      chan struct{}
	onWarning func(Warning)
}

func newGuard(req Request, inBytes int) *guard {
	g := &guard{budget: req.Budget, bound: bounds(req.Budget), tool: req.Tool.Name, pricing: req.Pricing, inBytes: int64(inBytes),
		warned: map[string]bool{}, stop: make(chan struct{}), onWarning: req.OnWarning}
	g.usage.ToolCalls = ledger.AddCount(req.ToolCallsUsed, 1) // this invocation counts
	return g
}

// report adds a usage report of the tool: its cost, or its tokens at the
// pricing's rate when it reports no cost.
func (g *guard) report(l usageLine) {
	u := ledger.Usage{Tokens: l.tokens, Cost: l.cost, ToolCalls: l.toolCalls}
	split := l.input > 0 || l.output > 0
	if !l.hasTokens {
		u.Tokens = ledger.AddCount(l.input, l.output)
	}
	if r := g.pricing.Rate(g.tool, l.model); !l.hasCost && r != nil {
		unsplit := u.Tokens
		if split {
			unsplit = 0
		}
		u.Cost = r.Cost(l.input, l.output, unsplit)
	}
	g.add(u, true)
}

// add counts usage: the tool's own report (byTool), or astra's count.
func (g *guard) add(u ledger.Usage, byTool bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.halted {
		return
	}
	if u.Tokens > 0 && !g.reported {
		g.reported, g.usage.Tokens = true, 0 // the tool's own figure replaces the estimate
	}
	g.usage = g.usage.Add(ledger.Usage{Tokens: u.Tokens, Cost: u.Cost, ToolCalls: u.ToolCalls})
	if byTool {
		g.checkBoundsLocked()
	}
	g.checkLocked()
}

// output counts output bytes for the token estimate.
func (g *guard) output(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.halted {
		return
	}
	g.outBytes += int64(n)
	g.checkLocked()
}

// halt ignores whatever arrives from now on: the tool is being stopped.
func (g *guard) halt() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.halted = true
}

// wallClock is called by the timer at 80% and 100% of the wall clock.
func (g *guard) wallClock(frac float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if frac >= 1 {
		g.exceed(LimitWallClock)
		return
	}
	g.warn(LimitWallClock, frac)
}

// estimateLocked counts tokens as 3 characters each (a
// conservative rule) while the tool reports no usage of its own; the
// caller holds the guard's lock.
func (g *guard) estimateLocked() {
	if !g.reported {
		g.usage.Tokens = int64(math.Ceil(float64(g.inBytes+g.outBytes) / 3))
	}
}

// checkBoundsLocked stops a run whose tool reported more than its bounds:
// no budget stop lets a run get there by honest reports, since it is
// stopped at its limit and a report past twice the limit is not one step.
func (g *guard) checkBoundsLocked() {
	u, b := g.usage, g.bound
	for _, c := range []struct {
		limit string
		over  bool
	}{{LimitCost, u.Cost > b.Cost}, {LimitTokens, g.reported && u.Tokens > b.Tokens}, {LimitToolCalls, u.ToolCalls > b.ToolCalls}} {
		if c.over && g.exceeded == "" {
			g.anomaly = true
			g.exceed(c.limit)
		}
	}
}

func (g *guard) checkLocked() {
	g.estimateLocked()
	b := g.budget
	// Integer comparisons (money is micro-dollars): a run stops when it
	// reaches 100% exactly, not one step late. used*5 cannot overflow:
	// counts stop at 2^53, money at 10^15.
	check := func(limit string, used, max int64) {
		switch {
		case used >= max:
			g.exceed(limit)
		case used*5 >= max*4: // 80%
			g.warn(limit, float64(used)/float64(max))
		}
	}
	if b.MaxTokens > 0 {
		check(LimitTokens, g.usage.Tokens, b.MaxTokens)
	}
	// A cost limit of 0 declares a tool that spends nothing: any cost
	// it reports stops it.
	if b.MaxCost > 0 || g.usage.Cost > 0 {
		check(LimitCost, int64(g.usage.Cost), int64(b.MaxCost))
	}
	if b.MaxToolCalls > 0 {
		check(LimitToolCalls, g.usage.ToolCalls, b.MaxToolCalls)
	}
}

func (g *guard) warn(limit string, frac float64) {
	if g.warned[limit] || g.exceeded != "" {
		return
	}
	g.warned[limit] = true
	if g.onWarning != nil {
		g.onWarning(Warning{Limit: limit, Snapshot: within(g.usage, g.bound), Fraction: frac})
	}
}

func (g *guard) exceed(limit string) {
	if g.exceeded != "" {
		return
	}
	g.warn(limit, 0.8) // a jump straight past 80% still warns first
	g.exceeded, g.halted = limit, true
	close(g.stop)
}

// preflight refuses a run whose chain already spent its tool calls.
func (g *guard) preflight() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.budget.MaxToolCalls; m > 0 && g.usage.ToolCalls > m {
		g.exceeded, g.halted = LimitToolCalls, true
		close(g.stop)
		return LimitToolCalls
	}
	return ""
}

// settle puts what the run used, within its bounds, into res, and when a
// limit stopped it, the failure; it reports whether one did.
func (g *guard) settle(res *Result, wall time.Duration) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.estimateLocked()
	u := g.usage
	u.WallClockMS = wall.Milliseconds()
	res.Usage = within(u, g.bound)
	if g.exceeded == "" {
		return false
	}
	res.Status, res.Reason, res.Exceeded = StatusFailed, ReasonBudgetExceeded, g.exceeded
	res.Error = exceededError(g.exceeded, g.budget, res.Usage)
	if g.anomaly {
		res.Reported = &u
		res.Error = anomalyError(g.exceeded, g.budget, g.bound, u, res.Usage)
	}
	return true
}

// exceededError words a budget stop for the ledger.
func exceededError(limit string, b model.TaskBudget, u ledger.Usage) string {
	switch limit {
	case LimitTokens:
		return fmt.Sprintf("stopped at %d tokens: budget max_tokens %d", u.Tokens, b.MaxTokens)
	case LimitCost:
		return fmt.Sprintf("stopped at %s: budget max_cost_usd %s", u.Cost.Dollars(), b.MaxCost.Dollars())
	case LimitToolCalls:
		return fmt.Sprintf("stopped at %d tool calls: budget max_tool_calls %d", u.ToolCalls, b.MaxToolCalls)
	case LimitWallClock:
		return fmt.Sprintf("killed after %s: budget max_wall_clock", b.MaxWallClock.D())
	}
	return "budget exceeded"
}

// anomalyError words a report past a run's bounds.
func anomalyError(limit string, b model.TaskBudget, bound, reported, recorded ledger.Usage) string {
	const tail = "the report is kept as evidence and not counted"
	switch limit {
	case LimitCost:
		if b.MaxCost == 0 {
			return fmt.Sprintf("the tool reported %s but is declared free (max_cost_usd 0): recorded as %s; %s", reported.Cost.Dollars(), recorded.Cost.Dollars(), tail)
		}
		return fmt.Sprintf("the tool reported %s, past twice its budget max_cost_usd %s: recorded as %s; %s",
			reported.Cost.Dollars(), b.MaxCost.Dollars(), bound.Cost.Dollars(), tail)
	case LimitTokens:
		return fmt.Sprintf("the tool reported %d tokens, past twice its budget max_tokens %d: recorded as %d; %s", reported.Tokens, b.MaxTokens, bound.Tokens, tail)
	default:
		return fmt.Sprintf("the tool reported %d tool calls, past twice its budget max_tool_calls %d: recorded as %d; %s", reported.ToolCalls, b.MaxToolCalls, bound.ToolCalls, tail)
	}
}
