// Package executor runs tools: exec (a process), http (a webhook), builtin
// and github (functions supplied by the caller), behind one interface, with
// per-run budgets enforced while the tool runs (the budget guard) and
// output kept only as a bounded, redacted tail.
package executor

import (
	"context"
	"encoding/json"
	"fmt"
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

// Request is one tool invocation.
type Request struct {
	Tool           *model.Tool
	ScheduleID     string
	RunID          string    // "<idempotency_key>#<attempt>", ASTRA_RUN_ID
	Slot           time.Time // the slot the run is for (an event's or a manual run's: when it was asked), ASTRA_SLOT
	TraceParent    string    // W3C traceparent, TRACEPARENT
	Payload        map[string]any
	PreviousOutput string // chain_next context
	Memory         string // recalled agent memory, JSON (ASTRA_MEMORY)
	Event          string // the triggering event's payload, JSON (ASTRA_EVENT)
	DryRun         bool
	ToolAllow      string           // the run's tool allow lists (model.ToolLists.Env), ASTRA_TOOL_ALLOW
	ToolDeny       string           // its tool deny patterns, ASTRA_TOOL_DENY
	Dir            string           // working directory of exec tools: the repository root
	Budget         model.TaskBudget // zero fields: no limit (max_cost_usd 0: spends nothing)
	Pricing        *model.Pricing   // prices of tokens reported without a cost
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
	Usage    ledger.Usage // what the run records: within Bounds of its budget
	// Reported is set when the tool reported usage beyond Bounds: what it
	// reported (saturating sums), kept as evidence and never counted.
	Reported *ledger.Usage
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
	if g.preflight() != "" {
		var res Result
		g.settle(&res, 0)
		return res
	}
	start := time.Now()
	if d := req.Budget.MaxWallClock.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	out, err := fn(ctx)
	g.output(len(out))
	res := Result{Status: StatusOK, Output: tailOf(out, e.opts.OutputTail)}
	if req.DryRun && req.Tool.Kind == model.KindGitHub {
		res.Status = StatusDryRun
	}
	stopped := g.settle(&res, time.Since(start))
	switch {
	case stopped:
	case ctx.Err() == context.DeadlineExceeded:
		res.Status, res.Reason, res.Exceeded, res.Error = StatusFailed, ReasonBudgetExceeded, LimitWallClock, exceededError(LimitWallClock, req.Budget, res.Usage)
	case err != nil:
		res.Status, res.Reason, res.Error = StatusFailed, ReasonError, err.Error()
	}
	return res
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
