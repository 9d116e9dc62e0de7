// Package executor runs tools: exec (a process), http (a webhook), builtin
// and github (functions supplied by the caller), behind one interface, with
// per-run budgets enforced while the tool runs (seed 002 BudgetGuard) and
// output kept only as a bounded, redacted tail.
package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/redact"
	"github.com/astra-gitops/astra/internal/sandbox"
)

// Statuses of a Result.
const (
	StatusOK       = "ok"
	StatusFailed   = "failed"
	StatusDryRun   = "dry_run"   // the tool ran in dry-run mode
	StatusWouldRun = "would_run" // a dry run of a tool without dry-run support: not invoked
)

// Failure reasons (ledger reasons).
const (
	ReasonBudgetExceeded = ledger.ReasonBudgetExceeded
	ReasonExit           = ledger.ReasonExit
	ReasonHTTPStatus     = "http_status"
	ReasonError          = "error"
	ReasonCanceled       = "canceled"
)

// Limits a run can exceed.
const (
	LimitTokens    = "tokens"
	LimitCost      = "cost_usd"
	LimitWallClock = "wall_clock"
	LimitToolCalls = "tool_calls"
)

// usagePrefix starts a usage line on a tool's stdout:
//
//	::astra-usage {"tokens":1200,"cost_usd":0.02,"tool_calls":1}
//
// Each line reports an increment; fields are optional.
const usagePrefix = "::astra-usage "

// Request is one tool invocation.
type Request struct {
	Tool           *model.Tool
	ScheduleID     string
	RunID          string // "<idempotency_key>#<attempt>", ASTRA_RUN_ID
	TraceParent    string // W3C traceparent, TRACEPARENT
	Payload        map[string]any
	PreviousOutput string // chain_next context
	Memory         string // recalled agent memory, JSON (ASTRA_MEMORY)
	Event          string // the triggering event's payload, JSON (ASTRA_EVENT)
	DryRun         bool
	Dir            string           // working directory of exec tools: the repository root
	Budget         model.TaskBudget // zero fields: no limit
	ToolCallsUsed  int64            // spent by earlier steps of the same chain
	Getenv         func(string) string
	OnWarning      func(Warning) // live, once per limit, at 80%
	Rollback       *Rollback     // set when the tool is a compensating command
	// Sandbox is the view an exec tool runs in (sandbox.Policy; the tool's
	// own HOME and TMPDIR are added). Nil: no view, only no_new_privs.
	Sandbox *sandbox.Policy
}

// Rollback names the run a compensating command undoes: its id
// (ASTRA_ROLLBACK_OF) and its recorded output tail (ASTRA_ORIGINAL_OUTPUT).
type Rollback struct {
	RunID  string
	Output string
}

// Warning is a budget crossing 80% while the tool runs.
type Warning struct {
	Limit    string
	Snapshot ledger.Usage
	Fraction float64
}

// Result is what a run came to.
type Result struct {
	Status   string
	Reason   string
	Exceeded string
	ExitCode int
	Output   string
	Usage    ledger.Usage
	WouldRun string
	Error    string
}

// Options configure an Executor.
type Options struct {
	OutputTail int // bytes of output kept (default 4096)
	Redactor   *redact.Redactor
	HTTPClient *http.Client
	Builtin    func(ctx context.Context, name string, payload map[string]any) (string, error)
	GitHub     func(ctx context.Context, tool *model.Tool, payload map[string]any, dryRun bool) (string, error)
	Sleep      func(context.Context, time.Duration) error
	KillGrace  time.Duration // between SIGTERM and SIGKILL (default 2s)
}

// Executor runs tools.
type Executor struct{ opts Options }

// New returns an Executor.
func New(opts Options) *Executor {
	if opts.OutputTail <= 0 {
		opts.OutputTail = 4096
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Sleep == nil {
		opts.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
				return nil
			}
		}
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 2 * time.Second
	}
	return &Executor{opts: opts}
}

// Run invokes the request's tool.
func (e *Executor) Run(ctx context.Context, req Request) Result {
	if req.Getenv == nil {
		req.Getenv = func(string) string { return "" }
	}
	red := e.opts.Redactor.With(envValues(req)...)
	var res Result
	switch req.Tool.Kind {
	case model.KindExec:
		res = e.runExec(ctx, req)
	case model.KindHTTP:
		res = e.runHTTP(ctx, req)
	case model.KindBuiltin, model.KindGitHub:
		res = e.runFunc(ctx, req)
	default:
		res = Result{Status: StatusFailed, Reason: ReasonError, Error: fmt.Sprintf("unknown tool kind %q", req.Tool.Kind)}
	}
	res.Output = red.String(res.Output)
	res.Error = red.String(res.Error)
	res.WouldRun = red.String(res.WouldRun)
	return res
}

// envValues are the values a tool receives through Tool.Env and its HMAC
// secret: they must not come back in its output.
func envValues(req Request) []string {
	var out []string
	for _, name := range req.Tool.Env {
		if v := req.Getenv(name); v != "" {
			out = append(out, v)
		}
	}
	if n := req.Tool.SignatureSecretEnv; n != "" {
		if v := req.Getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func payloadJSON(p map[string]any) []byte {
	if p == nil {
		p = map[string]any{}
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // the loader only accepts JSON-compatible payloads
	}
	return b
}

// guard enforces a run's budget as usage arrives (seed 002 BudgetGuard).
type guard struct {
	mu        sync.Mutex
	budget    model.TaskBudget
	usage     ledger.Usage
	reported  bool  // the tool reported tokens itself
	inBytes   int64 // input handed over, for the token estimate
	outBytes  int64
	warned    map[string]bool
	exceeded  string
	stop      chan struct{} // closed when a limit is reached
	onWarning func(Warning)
}

func newGuard(req Request, inBytes int) *guard {
	g := &guard{budget: req.Budget, inBytes: int64(inBytes), warned: map[string]bool{}, stop: make(chan struct{}), onWarning: req.OnWarning}
	g.usage.ToolCalls = req.ToolCallsUsed + 1 // this invocation counts
	return g
}

// add records usage reported by the tool.
func (g *guard) add(u ledger.Usage) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if u.Tokens > 0 && !g.reported {
		g.reported, g.usage.Tokens = true, 0 // the tool's own figure replaces the estimate
	}
	g.usage.Tokens += u.Tokens
	g.usage.Cost += u.Cost
	g.usage.ToolCalls += u.ToolCalls
	g.checkLocked()
}

// output counts output bytes for the token estimate.
func (g *guard) output(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.outBytes += int64(n)
	g.checkLocked()
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

// estimateLocked counts tokens as 3 characters each (seed 002's
// conservative rule) while the tool reports no usage of its own; the
// caller holds the guard's lock.
func (g *guard) estimateLocked() {
	if !g.reported {
		g.usage.Tokens = int64(math.Ceil(float64(g.inBytes+g.outBytes) / 3))
	}
}

func (g *guard) checkLocked() {
	g.estimateLocked()
	b := g.budget
	// Integer comparisons (money is micro-dollars): a run stops when it
	// reaches 100% exactly, not one step late.
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
		g.onWarning(Warning{Limit: limit, Snapshot: g.usage, Fraction: frac})
	}
}

func (g *guard) exceed(limit string) {
	if g.exceeded != "" {
		return
	}
	g.warn(limit, 0.8) // a jump straight past 80% still warns first
	g.exceeded = limit
	close(g.stop)
}

func (g *guard) snapshot(wall time.Duration) (ledger.Usage, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.estimateLocked()
	u := g.usage
	u.WallClockMS = wall.Milliseconds()
	return u, g.exceeded
}

// parseUsage reads the JSON of a usage line.
func parseUsage(b []byte) (ledger.Usage, bool) {
	var u ledger.Usage
	if json.Unmarshal(b, &u) != nil || u.Tokens < 0 || u.Cost < 0 || u.ToolCalls < 0 {
		return ledger.Usage{}, false
	}
	u.WallClockMS = 0 // astra measures the wall clock itself
	return u, true
}

// ring keeps the last n bytes written to it.
type ring struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) >= r.n {
		r.buf = append(r.buf[:0], p[len(p)-r.n:]...)
		return len(p), nil
	}
	if over := len(r.buf) + len(p) - r.n; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	r.buf = append(r.buf, p...)
	return len(p), nil
}

// String is the tail, starting on a UTF-8 boundary.
func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buf
	for i := 0; i < len(b) && i < utf8.UTFMax && !utf8.RuneStart(b[i]); i++ {
		b = b[1:]
	}
	return string(b)
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

// runFunc runs builtin and github tools, which the caller implements.
func (e *Executor) runFunc(ctx context.Context, req Request) Result {
	fn := func(ctx context.Context) (string, error) {
		if req.Tool.Kind == model.KindBuiltin {
			if e.opts.Builtin == nil {
				return "", fmt.Errorf("builtin tools are not configured")
			}
			return e.opts.Builtin(ctx, req.Tool.Name, req.Payload)
		}
		if e.opts.GitHub == nil {
			return "", fmt.Errorf("github tools need GITHUB_TOKEN and GITHUB_REPOSITORY")
		}
		return e.opts.GitHub(ctx, req.Tool, req.Payload, req.DryRun)
	}
	in := payloadJSON(req.Payload)
	g := newGuard(req, len(in)+len(req.PreviousOutput)+len(req.Memory))
	if limit := g.preflight(); limit != "" {
		u, _ := g.snapshot(0)
		return Result{Status: StatusFailed, Reason: ReasonBudgetExceeded, Exceeded: limit, Usage: u, Error: exceededError(limit, req.Budget, u)}
	}
	start := time.Now()
	if d := req.Budget.MaxWallClock.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	out, err := fn(ctx)
	g.output(len(out))
	u, exceeded := g.snapshot(time.Since(start))
	res := Result{Status: StatusOK, Output: tailOf(out, e.opts.OutputTail), Usage: u}
	if req.DryRun && req.Tool.Kind == model.KindGitHub {
		res.Status = StatusDryRun
	}
	switch {
	case exceeded != "":
		res.Status, res.Reason, res.Exceeded, res.Error = StatusFailed, ReasonBudgetExceeded, exceeded, exceededError(exceeded, req.Budget, u)
	case ctx.Err() == context.DeadlineExceeded:
		res.Status, res.Reason, res.Exceeded, res.Error = StatusFailed, ReasonBudgetExceeded, LimitWallClock, exceededError(LimitWallClock, req.Budget, u)
	case err != nil:
		res.Status, res.Reason, res.Error = StatusFailed, ReasonError, err.Error()
	}
	return res
}

// preflight refuses a run whose chain already spent its tool calls.
func (g *guard) preflight() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.budget.MaxToolCalls; m > 0 && g.usage.ToolCalls > m {
		g.exceeded = LimitToolCalls
		close(g.stop)
		return LimitToolCalls
	}
	return ""
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := &ring{n: n}
	r.Write([]byte(s))
	return r.String()
}

// shellQuote renders argv for people, as a shell would need it.
func shellQuote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
