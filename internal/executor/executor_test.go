package executor

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/redact"
)

func testdir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

func execTool(argv ...string) *model.Tool {
	return &model.Tool{Name: "t", Kind: model.KindExec, Command: argv, DryRunSupported: true}
}

func TestExecHandsOverPayloadAndMinimalEnv(t *testing.T) {
	tool := execTool("./echo.sh")
	tool.Env = []string{"TOOL_SECRET"}
	e := New(Options{})
	res := e.Run(context.Background(), Request{
		Tool: tool, ScheduleID: "sch_1", RunID: "sch_1@2026-11-22T09:00:00Z#1", Slot: time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("CET", 3600)), TraceParent: "00-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-01",
		Payload: map[string]any{"goal": "ship"}, PreviousOutput: "earlier result", Dir: testdir(t),
		Getenv: envOf(map[string]string{"PARENT_SECRET": "must-not-leak", "TOOL_SECRET": "tool-secret-value"}),
	})
	if res.Status != StatusOK {
		t.Fatalf("%+v", res)
	}
	for _, want := range []string{`stdin: {"goal":"ship"}`, `payload env: {"goal":"ship"}`, "dry: 0 run: sch_1@2026-11-22T09:00:00Z#1 schedule: sch_1 slot: 2026-11-22T09:00:00Z",
		"trace: 00-aaaa", "from parent: none", "from tool env: [REDACTED]", "<previous_task_output>", "earlier result", "to stderr"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if strings.Contains(res.Output, "tool-secret-value") {
		t.Error("a secret handed to the tool came back in its output")
	}
	if res.Usage.ToolCalls != 1 || res.Usage.Tokens == 0 || res.Usage.WallClockMS < 0 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// TestInputsAndPrivateDirs: a payload too large for an environment
// variable (Linux refuses one over 128 KiB) arrives on stdin and in the
// file ASTRA_PAYLOAD_FILE names; the tool has a HOME and a TMPDIR of its
// own, which are gone once it ran.
func TestInputsAndPrivateDirs(t *testing.T) {
	big := map[string]any{"text": strings.Repeat("x", 200<<10)}
	res := New(Options{}).Run(context.Background(), Request{Tool: execTool("./inputs.sh"), Dir: testdir(t), Payload: big,
		Getenv: envOf(map[string]string{"HOME": "/home/astra", "TMPDIR": "/tmp/astra"})})
	n := len(payloadJSON(big))
	for _, want := range []string{fmt.Sprintf("stdin: %d\n", n), fmt.Sprintf("file: %d\n", n), "env: 0\n"} {
		if res.Status != StatusOK || !strings.Contains(res.Output, want) {
			t.Fatalf("want %q: %+v", want, res)
		}
	}
	home := between(res.Output, "home: ", "\n")
	tmp := between(res.Output, "tmp: ", "\n")
	if home == "/home/astra" || tmp == "/tmp/astra" || filepath.Dir(home) != filepath.Dir(tmp) || strings.Contains(res.Output, "cannot write") {
		t.Fatalf("HOME %q, TMPDIR %q: not the tool's own\n%s", home, tmp, res.Output)
	}
	if _, err := os.Stat(filepath.Dir(home)); !os.IsNotExist(err) {
		t.Fatalf("the tool's directory %s is still there (%v)", filepath.Dir(home), err)
	}
	small := map[string]any{"k": "v"}
	res = New(Options{}).Run(context.Background(), Request{Tool: execTool("./inputs.sh"), Dir: testdir(t), Payload: small})
	if !strings.Contains(res.Output, fmt.Sprintf("env: %d\n", len(payloadJSON(small)))) {
		t.Fatalf("a small payload is in ASTRA_PAYLOAD too:\n%s", res.Output)
	}
}

func between(s, from, to string) string {
	_, s, _ = strings.Cut(s, from)
	s, _, _ = strings.Cut(s, to)
	return s
}

func TestExecFailureAndMissingCommand(t *testing.T) {
	e := New(Options{})
	res := e.Run(context.Background(), Request{Tool: execTool("./fail.sh"), Dir: testdir(t)})
	if res.Status != StatusFailed || res.Reason != ReasonExit || res.ExitCode != 3 || !strings.Contains(res.Output, "something went wrong") {
		t.Fatalf("%+v", res)
	}
	res = e.Run(context.Background(), Request{Tool: execTool("./nope.sh"), Dir: testdir(t)})
	if res.Status != StatusFailed || res.Reason != ReasonError || !strings.Contains(res.Error, "not found") {
		t.Fatalf("%+v", res)
	}
}

// TestAgentStoppedAtTokenBudget: usage lines are read while the tool runs;
// at 80% a warning, at 100% the tool is stopped long before it would end.
func TestAgentStoppedAtBudget(t *testing.T) {
	cases := []struct {
		name, limit string
		env         map[string]string
		budget      model.TaskBudget
	}{
		{"tokens", LimitTokens, map[string]string{"TOKENS": "1000"}, model.TaskBudget{MaxTokens: 10_000}},
		{"cost", LimitCost, map[string]string{"TOKENS": "1", "COST": "0.01"}, model.TaskBudget{MaxCost: money.Dollar / 10}},
		{"tool calls", LimitToolCalls, map[string]string{"TOKENS": "1", "CALLS": "1"}, model.TaskBudget{MaxToolCalls: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "finished")
			tool := execTool("./agent.sh", marker)
			tool.Env = []string{"TOKENS", "COST", "CALLS"}
			var mu sync.Mutex
			var warnings []Warning
			c.budget.MaxWallClock = model.Duration(time.Minute)
			res := New(Options{}).Run(context.Background(), Request{Tool: tool, Dir: testdir(t), Budget: c.budget, Getenv: envOf(c.env),
				OnWarning: func(w Warning) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() }})
			if res.Status != StatusFailed || res.Reason != ReasonBudgetExceeded || res.Exceeded != c.limit {
				t.Fatalf("%+v", res)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the agent ran to its end: it was not stopped")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(warnings) != 1 || warnings[0].Limit != c.limit || warnings[0].Fraction < 0.8 {
				t.Fatalf("warnings %+v, want one for %s at 80%%", warnings, c.limit)
			}
			if strings.Contains(res.Output, usagePrefix) {
				t.Error("usage lines left in the output")
			}
			switch c.limit {
			case LimitTokens:
				if res.Usage.Tokens < 10_000 || res.Usage.Tokens > 12_000 {
					t.Errorf("tokens at stop %d", res.Usage.Tokens)
				}
			case LimitCost:
				// Ten steps of a cent stop exactly at $0.10, not a step late.
				if res.Usage.Cost != money.Dollar/10 {
					t.Errorf("cost at stop %v", res.Usage.Cost)
				}
			}
		})
	}
}

// TestHangingToolKilledWithItsChildren: the wall clock kills the whole
// process group, and the run stops like at any other limit.
func TestHangingToolKilledWithItsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res := New(Options{KillGrace: 500 * time.Millisecond}).Run(context.Background(), Request{
		Tool: execTool("./hang.sh", pidFile), Dir: testdir(t), Budget: model.TaskBudget{MaxWallClock: model.Duration(time.Second)}})
	if res.Status != StatusFailed || res.Reason != ReasonBudgetExceeded || res.Exceeded != LimitWallClock {
		t.Fatalf("%+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; ; i++ {
		// A killed child lingers as a zombie until init reaps it; a live one
		// would still be in state S.
		if err := syscall.Kill(pid, 0); err != nil || zombie(pid) {
			break
		}
		if i > 100 {
			t.Fatalf("child %d survived the kill", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

func TestOutputIsABoundedTail(t *testing.T) {
	res := New(Options{OutputTail: 100}).Run(context.Background(), Request{Tool: execTool("./flood.sh"), Dir: testdir(t)})
	if res.Status != StatusOK || len(res.Output) > 100 || !strings.HasSuffix(res.Output, "THE END\n") {
		t.Fatalf("status %s, %d bytes: %q", res.Status, len(res.Output), res.Output)
	}
	if res.Usage.Tokens < 52428800/3 {
		t.Errorf("token estimate %d ignores the output", res.Usage.Tokens)
	}
}

func TestTokenEstimateWithoutUsage(t *testing.T) {
	res := New(Options{}).Run(context.Background(), Request{Tool: execTool("./quiet.sh"), Dir: testdir(t), Payload: map[string]any{"k": "v"}})
	in := len(`{"k":"v"}`)
	if want := int64((in + 301 + 2) / 3); res.Usage.Tokens != want {
		t.Fatalf("tokens %d, want ceil((%d+301)/3) = %d", res.Usage.Tokens, in, want)
	}
}

func TestDryRun(t *testing.T) {
	e := New(Options{})
	res := e.Run(context.Background(), Request{Tool: execTool("./echo.sh"), Dir: testdir(t), DryRun: true})
	if res.Status != StatusDryRun || !strings.Contains(res.Output, "dry: 1") {
		t.Fatalf("%+v", res)
	}
	tool := execTool("./echo.sh", "it's")
	tool.DryRunSupported = false
	res = e.Run(context.Background(), Request{Tool: tool, Dir: testdir(t), DryRun: true, Payload: map[string]any{"a": 1}})
	if res.Status != StatusWouldRun || res.WouldRun != `./echo.sh 'it'\''s' (payload 7 bytes on stdin)` || res.Output != "" {
		t.Fatalf("%+v", res)
	}
}

func TestToolCallsOfAChain(t *testing.T) {
	res := New(Options{}).Run(context.Background(), Request{Tool: execTool("./echo.sh"), Dir: testdir(t),
		ToolCallsUsed: 10, Budget: model.TaskBudget{MaxToolCalls: 10}})
	if res.Reason != ReasonBudgetExceeded || res.Exceeded != LimitToolCalls || res.Output != "" {
		t.Fatalf("a chain over its tool calls still ran: %+v", res)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res := New(Options{KillGrace: 200 * time.Millisecond}).Run(ctx, Request{Tool: execTool("./hang.sh", filepath.Join(t.TempDir(), "p")), Dir: testdir(t)})
	if res.Reason != ReasonCanceled {
		t.Fatalf("%+v", res)
	}
}

func httpTool(url string) *model.Tool {
	return &model.Tool{Name: "hook", Kind: model.KindHTTP, URL: url, Method: "POST", SignatureSecretEnv: "HOOK_SECRET", DryRunSupported: true,
		Headers: map[string]string{"X-Team": "astra"}}
}

func TestHTTPSignedEnvelope(t *testing.T) {
	secret := "hook-secret-123"
	var got envelope
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		if !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(Sign([]byte(secret), body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("X-Team") != "astra" || r.Header.Get("traceparent") == "" || r.Header.Get("X-Astra-Run-Id") != "k#1" ||
			r.Header.Get("X-Astra-Tool-Allow") != "github.*;gh*" || r.Header.Get("X-Astra-Tool-Deny") != "github.repos.delete" {
			http.Error(w, "headers", http.StatusBadRequest)
			return
		}
		json.Unmarshal(body, &got)
		w.Write([]byte(`{"ok":true,"usage":{"tokens":42,"cost_usd":0.01}}`))
	}))
	defer srv.Close()
	e := New(Options{})
	req := Request{Tool: httpTool(srv.URL), ScheduleID: "s", RunID: "k#1", Slot: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), TraceParent: "00-x-y-01",
		ToolAllow: "github.*;gh*", ToolDeny: "github.repos.delete", Payload: map[string]any{"to": "a@b"}, Budget: model.TaskBudget{MaxCost: money.Dollar},
		PreviousOutput: "prev", Getenv: envOf(map[string]string{"HOOK_SECRET": secret})}
	res := e.Run(context.Background(), req)
	if res.Status != StatusOK || got.ScheduleID != "s" || got.Payload["to"] != "a@b" || got.PreviousOutput != "prev" || got.DryRun || got.Slot != "2026-11-22T09:00:00Z" {
		t.Fatalf("%+v %+v", res, got)
	}
	if res.Usage.Tokens != 42 || res.Usage.Cost != money.Dollar/100 {
		t.Errorf("usage from the response: %+v", res.Usage)
	}
	// A missing secret is an error, not an unsigned request.
	req.Getenv = envOf(map[string]string{"HOOK_SECRET": ""})
	if res := e.Run(context.Background(), req); res.Reason != ReasonError || !strings.Contains(res.Error, "HOOK_SECRET") || hits.Load() != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestHTTPRetriesOnlyIdempotent(t *testing.T) {
	for _, idem := range []bool{true, false} {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) < 3 {
				http.Error(w, "busy", http.StatusBadGateway)
				return
			}
			w.Write([]byte("done"))
		}))
		tool := httpTool(srv.URL)
		tool.SignatureSecretEnv, tool.Idempotent = "", idem
		var slept []time.Duration
		e := New(Options{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
		res := e.Run(context.Background(), Request{Tool: tool})
		srv.Close()
		if idem {
			if res.Status != StatusOK || hits.Load() != 3 || len(slept) != 2 || res.Usage.ToolCalls != 3 {
				t.Fatalf("idempotent: %+v, %d hits, slept %v", res, hits.Load(), slept)
			}
		} else if res.Status != StatusFailed || res.Reason != ReasonHTTPStatus || hits.Load() != 1 || res.ExitCode != 502 {
			t.Fatalf("non-idempotent tool retried: %+v, %d hits", res, hits.Load())
		}
	}
}

func TestHTTPDryRun(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Astra-Dry-Run") != "1" {
			http.Error(w, "not a dry run", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	env := envOf(map[string]string{"HOOK_SECRET": "s3cret-hook"})
	tool := httpTool(srv.URL)
	if res := New(Options{}).Run(context.Background(), Request{Tool: tool, DryRun: true, Getenv: env}); res.Status != StatusDryRun || hits.Load() != 1 {
		t.Fatalf("%+v", res)
	}
	tool.DryRunSupported = false
	res := New(Options{}).Run(context.Background(), Request{Tool: tool, DryRun: true, Getenv: env})
	if res.Status != StatusWouldRun || hits.Load() != 1 || !strings.HasPrefix(res.WouldRun, "POST "+srv.URL) || !strings.Contains(res.WouldRun, "signed") {
		t.Fatalf("%+v (hits %d)", res, hits.Load())
	}
}

func TestFuncToolsAndRedaction(t *testing.T) {
	e := New(Options{
		Redactor: redact.New("global-secret-1"),
		Builtin: func(_ context.Context, name string, p map[string]any) (string, error) {
			return name + " says global-secret-1", nil
		},
	})
	res := e.Run(context.Background(), Request{Tool: &model.Tool{Name: "tasks_list", Kind: model.KindBuiltin}})
	if res.Status != StatusOK || res.Output != "tasks_list says [REDACTED]" {
		t.Fatalf("%+v", res)
	}
	res = e.Run(context.Background(), Request{Tool: &model.Tool{Name: "gh", Kind: model.KindGitHub}})
	if res.Status != StatusFailed || !strings.Contains(res.Error, "GITHUB_TOKEN") {
		t.Fatalf("%+v", res)
	}
}
