package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/astra-gitops/astra/internal/gittest"
)

// TestTraceOfARun runs `astra run-due` started inside a trace (TRACEPARENT
// set, as a triggering system would) against a real OTLP/HTTP receiver and
// decodes what the SDK sent: the run continues the incoming trace, the
// task is its child with the span id its tool received, the chained step
// is the task's child, every task span carries its autonomy level and a
// failed one its error.type, and no secret reaches the receiver.
func TestTraceOfARun(t *testing.T) {
	url, received := otlpReceiver(t)

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"schedules/s.yaml": `schedules:
  - {id: fetch, name: fetch, cron: "0 * * * *", target_tool: show, result_route: {type: chain_next, schedule: publish}}
  - {id: publish, name: publish, cron: "0 0 1 1 *", target_tool: fail}
`,
		"policies/p.yaml": `tools:
  show: {kind: exec, command: [sh, show.sh], tier: 0}
  fail: {kind: exec, command: [sh, fail.sh], tier: 0}
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
		"show.sh": "echo \"traceparent=$TRACEPARENT\"\n",
		"fail.sh": "echo \"token $GITHUB_TOKEN\" >&2; exit 1\n",
	})
	gittest.Must(t, dir, "init", "-q")
	gittest.Must(t, dir, "add", ".")
	gittest.Must(t, dir, "commit", "-qm", "init")

	const incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const secret = "ghp_0123456789abcdefSECRET"
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": url, "TRACEPARENT": incoming, "GITHUB_TOKEN": secret,
	}
	astra := inProcess(t, dir, env)
	astra("run-due", "--no-push", "--now", "2026-11-22T08:00:00Z", "--test-clock")
	out := astra("run-due", "--no-push", "--now", "2026-11-22T09:00:10Z", "--test-clock")
	if !strings.Contains(out, "ran") {
		t.Fatalf("run-due:\n%s", out)
	}
	got := astra("ledger", "cat")
	i := strings.Index(got, "traceparent=00-")
	if i < 0 {
		t.Fatalf("the tool's TRACEPARENT is not in the ledger:\n%s", got)
	}
	toolParent := got[i+len("traceparent=") : i+len("traceparent=")+55]

	spans := decodeSpans(t, received("/v1/traces"), secret)
	run, task, step := spans["astra run-due"], spans["astra task fetch"], spans["astra task publish"]
	if run == nil || task == nil || step == nil {
		t.Fatalf("want a run, a task and a chained step; got %v", keys(spans))
	}
	id := func(b []byte) string { return hex.EncodeToString(b) }
	trace := "0af7651916cd43dd8448eb211c80319c"
	if id(run.TraceId) != trace || id(run.ParentSpanId) != "b7ad6b7169203331" {
		t.Errorf("run span in trace %s under %s, want the incoming traceparent", id(run.TraceId), id(run.ParentSpanId))
	}
	if id(task.TraceId) != trace || id(task.ParentSpanId) != id(run.SpanId) {
		t.Errorf("task span in trace %s under %s, want a child of the run span %s", id(task.TraceId), id(task.ParentSpanId), id(run.SpanId))
	}
	if want := "00-" + trace + "-" + id(task.SpanId) + "-01"; toolParent != want {
		t.Errorf("the tool got TRACEPARENT %s, its span is %s", toolParent, want)
	}
	if id(step.TraceId) != trace || id(step.ParentSpanId) != id(task.SpanId) {
		t.Errorf("chained step under %s, want a child of the task span %s", id(step.ParentSpanId), id(task.SpanId))
	}
	if step.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || task.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("statuses: task %v, failed step %v", task.Status, step.Status)
	}
	checkAttributes(t, task, map[string]string{"astra.schedule.id": "fetch", "astra.tool": "show", "astra.action": "ran", "astra.autonomy": "L3"})
	// The failed step says why in OpenTelemetry's terms: error.type is
	// its reason word; a span that did not fail has none.
	checkAttributes(t, step, map[string]string{"error.type": "exit", "astra.autonomy": "L3"})
	for _, kv := range task.Attributes {
		if kv.Key == "error.type" {
			t.Errorf("a task that ran has error.type %s", kv.Value)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// otlpReceiver is an OTLP/HTTP endpoint for traces and metrics; received
// returns the request bodies of a path ("/v1/traces") so far.
func otlpReceiver(t *testing.T) (url string, received func(path string) [][]byte) {
	var mu sync.Mutex
	bodies := map[string][][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if (r.URL.Path != "/v1/traces" && r.URL.Path != "/v1/metrics") || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP request %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		mu.Lock()
		bodies[r.URL.Path] = append(bodies[r.URL.Path], b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		var out []byte
		if r.URL.Path == "/v1/metrics" {
			out, _ = proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		} else {
			out, _ = proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		}
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(path string) [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), bodies[path]...)
	}
}

// TestMetricsOfARun: each run-due exports its metrics once, as it ends,
// to the endpoint the spans go to: tasks by outcome, the tools' time,
// spend, and the approvals pending and dead letters after it.
func TestMetricsOfARun(t *testing.T) {
	url, received := otlpReceiver(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"schedules/s.yaml": `- {id: spend, name: spend, cron: "0 * * * *", target_tool: spend, budget: {max_cost_usd: 1}}
- {id: bad, name: bad, cron: "0 * * * *", target_tool: bad, retry: {max_attempts: 1}}
- {id: ask, name: ask, cron: "0 * * * *", target_tool: ask}
`,
		"policies/p.yaml": `tools:
  spend: {kind: exec, command: [sh, spend.sh], tier: 0}
  bad: {kind: exec, command: [sh, -c, "exit 1"], tier: 0}
  ask: {kind: exec, command: [sh, -c, "exit 0"], tier: 1, requires_approval: true}
roles:
  founder: [octocat]
permissions:
  approve: [founder]
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
`,
		"spend.sh": "echo '::astra-usage {\"cost_usd\":0.25}'\n",
	})
	gittest.Must(t, dir, "init", "-q")
	gittest.Must(t, dir, "add", ".")
	gittest.Must(t, dir, "commit", "-qm", "init")
	astra := inProcess(t, dir, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
	astra("run-due", "--no-push", "--now", "2026-11-22T08:00:00Z", "--test-clock")
	before := len(received("/v1/metrics"))
	if out := astra("run-due", "--no-push", "--now", "2026-11-22T09:00:10Z", "--test-clock"); !strings.Contains(out, "1 ran, 1 failed") {
		t.Fatalf("run-due:\n%s", out)
	}
	astra("run-due", "--dry-run", "--now", "2026-11-22T10:00:10Z")
	bodies := received("/v1/metrics")
	if len(bodies) != before+1 {
		t.Fatalf("%d metric exports for one run and a dry run, want 1", len(bodies)-before)
	}
	var req colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(bodies[len(bodies)-1], &req); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, dp := range m.GetSum().GetDataPoints() {
					key := m.Name
					for _, kv := range dp.Attributes {
						if kv.Key == "astra.outcome" {
							key += " " + kv.Value.GetStringValue()
						}
					}
					got[key] += dp.GetAsDouble() + float64(dp.GetAsInt())
				}
				for _, dp := range m.GetGauge().GetDataPoints() {
					got[m.Name] = float64(dp.GetAsInt())
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					got[m.Name+" count"] += float64(dp.GetCount())
				}
			}
		}
	}
	want := map[string]float64{"astra.runs ran": 1, "astra.runs failed": 1, "astra.runs awaiting_approval": 1, "astra.spend ran": 0.25,
		"astra.run.duration count": 2, "astra.approvals.pending": 1, "astra.dead_letters": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// decodeSpans returns the spans by name (a later span replaces an earlier
// one of the same name) and fails when secret was exported.
func decodeSpans(t *testing.T, bodies [][]byte, secret string) map[string]*tracepb.Span {
	t.Helper()
	spans := map[string]*tracepb.Span{}
	for _, b := range bodies {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("a secret reached the OTLP receiver")
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = s
				}
			}
		}
	}
	return spans
}

func checkAttributes(t *testing.T, span *tracepb.Span, want map[string]string) {
	t.Helper()
	attrs := map[string]string{}
	for _, kv := range span.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, v := range want {
		if !strings.Contains(attrs[k], `"`+v+`"`) {
			t.Errorf("%s attribute %s = %s, want %q", span.Name, k, attrs[k], v)
		}
	}
}

// writeTree writes files (path: content) under dir, executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil { // scripts run as programs
			t.Fatal(err)
		}
	}
}

// inProcess runs astra in this process on the repository dir with env as
// its whole environment, returning what it printed.
func inProcess(t *testing.T, dir string, env map[string]string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		var environ []string
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		Execute(context.Background(), append([]string{"--repo", dir}, args...), strings.NewReader(""), &out, &out, environ)
		return out.String()
	}
}
