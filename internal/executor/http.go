package executor

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// SignatureHeader carries hex HMAC-SHA256 of the body with the tool's secret.
const SignatureHeader = "X-Astra-Signature"

// Sign is the SignatureHeader value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// envelope is the JSON body of an http tool call.
type envelope struct {
	ScheduleID     string          `json:"schedule_id"`
	RunID          string          `json:"run_id"`
	Slot           string          `json:"slot,omitempty"`
	DryRun         bool            `json:"dry_run"`
	Payload        map[string]any  `json:"payload"`
	PreviousOutput string          `json:"previous_task_output,omitempty"`
	Memory         json.RawMessage `json:"memory,omitempty"`
	Event          json.RawMessage `json:"event,omitempty"`
}

const httpAttempts = 3

func (e *Executor) runHTTP(ctx context.Context, req Request) Result {
	t := req.Tool
	body, err := requestBody(req)
	if err != nil {
		return Result{Status: StatusFailed, Reason: ReasonError, Error: err.Error()}
	}
	var secret []byte
	if n := t.SignatureSecretEnv; n != "" {
		if secret = []byte(req.Getenv(n)); len(secret) == 0 {
			return Result{Status: StatusFailed, Reason: ReasonError,
				Error: fmt.Sprintf("%s is not set: the tool's requests must be signed with it (pass it to the astra step as a secret)", n)}
		}
	}
	if req.DryRun && !t.DryRunSupported {
		signed := ""
		if secret != nil {
			signed = ", signed"
		}
		return Result{Status: StatusWouldRun, WouldRun: fmt.Sprintf("%s %s (body %d bytes%s)", t.Method, t.URL, len(body), signed)}
	}
	g := newGuard(req, len(body))
	if g.preflight() != "" {
		var res Result
		g.settle(&res, 0)
		return res
	}
	start := time.Now()
	var res Result
	for attempt := 1; ; attempt++ {
		var retry bool
		res, retry = e.httpOnce(ctx, req, body, secret, g)
		if !retry || !t.Idempotent || attempt >= httpAttempts {
			break
		}
		if err := e.opts.Sleep(ctx, time.Duration(1<<(attempt-1))*time.Second); err != nil {
			break
		}
		g.add(ledger.Usage{ToolCalls: 1}, false) // each attempt is a tool call
	}
	// A budget stop outranks the answer's own failure only when the answer
	// succeeded, or when the report itself was past the run's bounds.
	failed := res
	if g.settle(&res, time.Since(start)) && failed.Status != StatusOK && res.Reported == nil {
		failed.Usage = res.Usage
		res = failed
	}
	return res
}

// requestBody is the JSON envelope an http tool receives.
func requestBody(req Request) ([]byte, error) {
	payload := req.Payload
	if payload == nil {
		payload = map[string]any{}
	}
	env := envelope{ScheduleID: req.ScheduleID, RunID: req.RunID, DryRun: req.DryRun, Payload: payload, PreviousOutput: req.PreviousOutput}
	if !req.Slot.IsZero() {
		env.Slot = req.Slot.UTC().Format(time.RFC3339)
	}
	if req.Memory != "" {
		env.Memory = json.RawMessage(req.Memory)
	}
	if req.Event != "" {
		env.Event = json.RawMessage(req.Event)
	}
	return json.Marshal(env)
}

// httpOnce sends one request; retry reports a 5xx or connection failure.
func (e *Executor) httpOnce(ctx context.Context, req Request, body, secret []byte, g *guard) (Result, bool) {
	t := req.Tool
	if d := req.Budget.MaxWallClock.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, t.Method, t.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Status: StatusFailed, Reason: ReasonError, Error: err.Error()}, false
	}
	for k, v := range t.Headers {
		hr.Header.Set(k, v)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Astra-Run-Id", req.RunID)
	if req.ToolAllow != "" {
		hr.Header.Set("X-Astra-Tool-Allow", req.ToolAllow)
	}
	if req.ToolDeny != "" {
		hr.Header.Set("X-Astra-Tool-Deny", req.ToolDeny)
	}
	if req.TraceParent != "" {
		hr.Header.Set("traceparent", req.TraceParent)
	}
	if req.DryRun {
		hr.Header.Set("X-Astra-Dry-Run", "1")
	}
	if secret != nil {
		hr.Header.Set(SignatureHeader, Sign(secret, body))
	}
	resp, err := e.opts.HTTPClient.Do(hr)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{Status: StatusFailed, Reason: ReasonBudgetExceeded, Exceeded: LimitWallClock, Error: fmt.Sprintf("%s %s: no answer within max_wall_clock", t.Method, t.URL)}, false
		}
		return Result{Status: StatusFailed, Reason: ReasonError, Error: err.Error()}, true
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	g.output(len(data))
	var withUsage struct {
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(data, &withUsage) == nil && len(withUsage.Usage) > 0 {
		if l, ok := parseUsage(withUsage.Usage); ok {
			g.report(l)
		}
	}
	res := Result{Status: StatusOK, Output: tailOf(string(data), e.opts.OutputTail)}
	if req.DryRun {
		res.Status = StatusDryRun
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.Status, res.Reason, res.ExitCode = StatusFailed, ReasonHTTPStatus, resp.StatusCode
		res.Error = fmt.Sprintf("%s %s: %s", t.Method, t.URL, resp.Status)
		return res, resp.StatusCode >= 500
	}
	return res, false
}
