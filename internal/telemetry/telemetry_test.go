package telemetry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/astra-gitops/astra/internal/errkind"
)

const (
	secret      = "hunter2-s3cr3t-value"                                    // a value the redactor knows
	headerToken = "otlp-ingest-token-0451"                                  // the collector's credential
	incoming    = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" // a triggering system's TRACEPARENT
)

func redactSecret(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// spanOf derives a span id from a run id, as the runner does.
func spanOf(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:8])
}

// hostileEnv sets process variables that would change everything if the
// package or the SDK read them: only Options.Getenv may count. The CA
// file is a real one: the exporter would refuse to send it over http://.
func hostileEnv(t *testing.T) {
	ca := httptest.NewTLSServer(nil)
	ca.Close()
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/elsewhere",
		"OTEL_EXPORTER_OTLP_HEADERS":         "x-leak=1",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/json",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":     file,
		"OTEL_EXPORTER_OTLP_TIMEOUT":         "1",
		"OTEL_TRACES_SAMPLER":                "always_off",
		"OTEL_SERVICE_NAME":                  "not-astra",
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT":    "0",
		"OTEL_BSP_MAX_EXPORT_BATCH_SIZE":     "1",
	} {
		t.Setenv(k, v)
	}
}

// The scenario's traces and spans: alpha in its own ledger trace, gamma
// chained after it, beta in the incoming trace, delta a retry in an older
// trace (its first attempt spanR1).
var (
	traceA, traceR         = "4bf92f3577b34da6a3ce929d0e0e4736", "5b8aa5a2d2c872e8321cf37308d69df2"
	spanA, spanC, spanB    = spanOf("alpha@2026-11-23T09:00:00Z"), spanOf("alpha@2026-11-23T09:00:00Z>gamma"), spanOf("beta@2026-11-23T09:00:00Z")
	spanR1, spanR2         = spanOf("delta@2026-11-23T08:00:00Z"), spanOf("delta@2026-11-23T08:00:00Z#2")
	runTrace, incomingSpan = func() (string, string) { tr, sp, _ := ParseTraceParent(incoming); return tr, sp }()
)

// TestTraceOfRunWithChainedTask records a run continuing an incoming
// TRACEPARENT, with a task in its own ledger trace and that task's chained
// step, a task continuing the incoming trace, and a retry in an older
// trace; then checks what a real OTLP receiver decoded, over each protocol.
func TestTraceOfRunWithChainedTask(t *testing.T) {
	hostileEnv(t)
	for _, tc := range []struct {
		name, protocol, compression string
		receiver                    func(testing.TB) (*receiver, string)
	}{
		{"http", "", "", newHTTPReceiver},
		{"http-gzip", "http/protobuf", "gzip", newHTTPReceiver},
		{"grpc", "grpc", "", newGRPCReceiver},
		{"grpc-gzip", "grpc", "gzip", newGRPCReceiver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, url := tc.receiver(t)
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    url,
				"OTEL_EXPORTER_OTLP_PROTOCOL":    tc.protocol,
				"OTEL_EXPORTER_OTLP_COMPRESSION": tc.compression,
				"OTEL_EXPORTER_OTLP_HEADERS":     "x-api-key=" + headerToken + ",x-tenant=acme%20corp",
			}
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,service.name=not-astra") // the SDK reads this one itself
			tel, err := Setup(context.Background(), Options{Getenv: envOf(env), Redact: redactSecret, Version: "1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			runParent := recordRun(t, tel)
			spans, resources := rec.spans(t)
			if len(spans) != 5 {
				t.Fatalf("received %d spans, want 5: %v", len(spans), spans)
			}
			got := received{spans["astra run-due"], spans["astra task alpha"], spans["astra task gamma"], spans["astra task beta"], spans["astra task delta"]}
			checkParents(t, got, runParent)
			checkLinks(t, got)
			checkAttributes(t, got)
			checkStatuses(t, got)
			checkResources(t, resources)
			checkRequests(t, rec, tc.protocol, tc.compression)
		})
	}
}

// recordRun records the scenario through tel and returns the run span's
// traceparent.
func recordRun(t *testing.T, tel *Tracer) string {
	t.Helper()
	slot := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	ctx, run := tel.Start(context.Background(), "astra run-due", Parent(incoming), Kind(trace.SpanKindConsumer), Attrs(AttrDryRun, false))
	actx, a := tel.Start(ctx, "astra task alpha", TraceID(traceA), SpanID(spanA), Attrs(
		AttrScheduleID, "alpha", AttrScheduleName, "alpha", AttrSlot, slot, AttrIdempotencyKey, "alpha@2026-11-23T09:00:00Z",
		AttrTool, "deploy", AttrTier, 1, AttrActor, "astra", AttrAttempt, 1, AttrMode, "scheduled",
		AttrReason, "payload token="+secret, "astra.labels", []string{"a", secret}))
	if got, want := a.TraceParent(), "00-"+traceA+"-"+spanA+"-01"; got != want {
		t.Errorf("task traceparent %s, want the one handed to tools %s", got, want)
	}
	_, c := tel.Start(actx, "astra task gamma", TraceID(traceA), SpanID(spanC), Attrs(AttrScheduleID, "gamma"))
	c.SetAttrs(AttrUsageTokens, int64(120), AttrUsageCostUSD, 0.0042, AttrUsageToolCalls, int64(2), AttrAction, "ran", AttrReason, "")
	c.End(nil)
	a.SetAttrs(AttrAction, "ran")
	a.End(nil)
	_, b := tel.Start(ctx, "astra task beta", TraceID(run.TraceID()), SpanID(spanB))
	b.SetAttrs(AttrAction, "failed", AttrReason, "exit_code")
	b.End(errors.New("tool exited 1: Authorization: " + secret))
	_, r := tel.Start(ctx, "astra task delta", TraceID(traceR), SpanID(spanR2), Link("00-"+traceR+"-"+spanR1+"-01"), Attrs(AttrAttempt, 2))
	r.End(nil)
	run.End(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return run.TraceParent()
}

// received are the scenario's spans as the receiver decoded them.
type received struct{ run, alpha, gamma, beta, delta *tracepb.Span }

// checkParents: each span is in its trace under its parent, the run
// continuing the incoming trace.
func checkParents(t *testing.T, got received, runParent string) {
	t.Helper()
	check := func(name string, s *tracepb.Span, trace, span, parent string) {
		t.Helper()
		if s == nil {
			t.Fatalf("span %s not received", name)
		}
		if hexID(s.TraceId) != trace || (span != "" && hexID(s.SpanId) != span) || hexID(s.ParentSpanId) != parent {
			t.Errorf("%s: trace %x span %x parent %x, want trace %s span %s parent %q", name, s.TraceId, s.SpanId, s.ParentSpanId, trace, span, parent)
		}
	}
	check("run", got.run, runTrace, "", incomingSpan)
	runSpanID := hexID(got.run.SpanId)
	if runParent != "00-"+runTrace+"-"+runSpanID+"-01" {
		t.Errorf("run traceparent %s", runParent)
	}
	check("alpha", got.alpha, traceA, spanA, "")
	check("gamma (chained after alpha)", got.gamma, traceA, spanC, spanA)
	check("beta (in the incoming trace)", got.beta, runTrace, spanB, runSpanID)
	check("delta (a retry in its old trace)", got.delta, traceR, spanR2, "")
	if got.run.Kind != tracepb.Span_SPAN_KIND_CONSUMER || got.alpha.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds: run %v, task %v", got.run.Kind, got.alpha.Kind)
	}
}

// checkLinks: a task in a trace of its own links to the run span, a retry
// to its previous attempt first; a chained step needs no link.
func checkLinks(t *testing.T, got received) {
	t.Helper()
	links := func(s *tracepb.Span) []string {
		var out []string
		for _, l := range s.Links {
			out = append(out, hexID(l.TraceId)+"/"+hexID(l.SpanId))
		}
		return out
	}
	toRun := runTrace + "/" + hexID(got.run.SpanId)
	if l := links(got.alpha); len(l) != 1 || l[0] != toRun {
		t.Errorf("alpha links %v, want the run span %s", l, toRun)
	}
	if l := links(got.delta); len(l) != 2 || l[0] != traceR+"/"+spanR1 || l[1] != toRun {
		t.Errorf("delta links %v, want its previous attempt then the run span", l)
	}
	if l := links(got.gamma); len(l) != 0 {
		t.Errorf("gamma links %v, want none (its parent is alpha)", l)
	}
}

// checkAttributes: attributes arrive typed, redacted, and without the
// empty ones.
func checkAttributes(t *testing.T, got received) {
	t.Helper()
	alpha, gamma := got.alpha, got.gamma
	str := func(s *tracepb.Span, k string) string { return attr(s.Attributes, k).GetStringValue() }
	if str(alpha, AttrScheduleID) != "alpha" || str(alpha, AttrTool) != "deploy" || str(alpha, AttrSlot) != "2026-11-23T09:00:00Z" ||
		str(alpha, AttrAction) != "ran" || str(alpha, AttrMode) != "scheduled" || str(alpha, AttrReason) != "payload token=[REDACTED]" {
		t.Errorf("alpha string attributes: %v", alpha.Attributes)
	}
	if attr(alpha.Attributes, AttrTier).GetIntValue() != 1 || attr(alpha.Attributes, AttrAttempt).GetIntValue() != 1 {
		t.Errorf("alpha int attributes: %v", alpha.Attributes)
	}
	if v := attr(got.run.Attributes, AttrDryRun); v == nil || v.GetBoolValue() {
		t.Errorf("run attributes: %v", got.run.Attributes)
	}
	if attr(gamma.Attributes, AttrUsageTokens).GetIntValue() != 120 || attr(gamma.Attributes, AttrUsageCostUSD).GetDoubleValue() != 0.0042 ||
		attr(gamma.Attributes, AttrUsageToolCalls).GetIntValue() != 2 || attr(gamma.Attributes, AttrReason) != nil {
		t.Errorf("gamma usage attributes: %v", gamma.Attributes)
	}
}

// checkStatuses: a failed task's span is an error, its message redacted;
// a task that ran leaves the status unset.
func checkStatuses(t *testing.T, got received) {
	t.Helper()
	if got.beta.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || got.beta.Status.GetMessage() != "tool exited 1: Authorization: [REDACTED]" {
		t.Errorf("beta status %v", got.beta.Status)
	}
	if got.alpha.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("alpha status %v", got.alpha.Status)
	}
}

// checkResources: the resource is astra's, whatever the environment says
// its service name is.
func checkResources(t *testing.T, resources []*tracepb.ResourceSpans) {
	t.Helper()
	if len(resources) == 0 {
		t.Fatal("no resource")
	}
	for _, rs := range resources {
		ra := rs.Resource.Attributes
		if attr(ra, "service.name").GetStringValue() != "astra" || attr(ra, "service.version").GetStringValue() != "1.2.3" ||
			attr(ra, "deployment.environment").GetStringValue() != "ci" {
			t.Errorf("resource %v", ra)
		}
	}
}

// checkRequests: no request carries a secret; each carries the configured
// headers only, compressed and typed as configured.
func checkRequests(t *testing.T, rec *receiver, protocol, compression string) {
	t.Helper()
	for i, body := range rec.bodies {
		if bytes.Contains(body, []byte(secret)) || bytes.Contains(body, []byte(headerToken)) {
			t.Errorf("request %d carries a secret", i)
		}
		h := rec.headers[i]
		if h["x-api-key"] != headerToken || h["x-tenant"] != "acme corp" || h["x-leak"] != "" {
			t.Errorf("request %d headers %v", i, h)
		}
		if rec.gzipped[i] != (compression == "gzip") {
			t.Errorf("request %d gzipped %v, want %v", i, rec.gzipped[i], compression == "gzip")
		}
		if protocol != "grpc" && rec.types[i] != "application/x-protobuf" {
			t.Errorf("request %d Content-Type %s", i, rec.types[i])
		}
	}
}

// TestJSONProtocol checks OTEL_EXPORTER_OTLP_PROTOCOL=http/json reaches the
// traces-specific endpoint as is.
func TestJSONProtocol(t *testing.T) {
	rec, url := newHTTPReceiver(t)
	tel, err := Setup(context.Background(), Options{Getenv: envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/v1/traces",
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.Start(context.Background(), "astra run-due", TraceID("4bf92f3577b34da6a3ce929d0e0e4736"))
	s.End(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.hits() != 1 || rec.types[0] != "application/json" || !bytes.Contains(bytes.ToLower(rec.bodies[0]), []byte(`"4bf92f3577b34da6a3ce929d0e0e4736"`)) {
		t.Fatalf("got %d requests %q: %s", rec.hits(), rec.types, rec.bodies)
	}
}

// TestUnsampledParent: a TRACEPARENT whose caller did not sample leaves the
// spans of its trace unrecorded (parent-based sampling); a task in its own
// trace is still exported.
func TestUnsampledParent(t *testing.T) {
	rec, url := newHTTPReceiver(t)
	tel, err := Setup(context.Background(), Options{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, run := tel.Start(context.Background(), "astra run-due", Parent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"))
	_, same := tel.Start(ctx, "astra task beta")
	_, own := tel.Start(ctx, "astra task alpha", TraceID("4bf92f3577b34da6a3ce929d0e0e4736"))
	for _, s := range []*Span{own, same, run} {
		s.End(nil)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(run.TraceParent(), "-00") || !strings.HasSuffix(own.TraceParent(), "-01") {
		t.Errorf("traceparents %s, %s", run.TraceParent(), own.TraceParent())
	}
	spans, _ := rec.spans(t)
	if len(spans) != 1 || spans["astra task alpha"] == nil {
		t.Fatalf("exported %v, want the task in its own trace only", spans)
	}
}

// otelGoroutines counts goroutines running OpenTelemetry code (a batch
// processor, an exporter).
func otelGoroutines() int {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "go.opentelemetry.io/") {
			n++
		}
	}
	return n
}

// TestDisabled: without an endpoint (in Getenv: the process environment
// does not count), or when switched off, nothing is exported and no
// exporter or goroutine exists, yet spans carry astra's ids.
func TestDisabled(t *testing.T) {
	rec, url := newHTTPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/v1/traces", "OTEL_TRACES_EXPORTER": "none"},
		nil, // a nil Tracer
	} {
		before := otelGoroutines()
		var tel *Tracer
		if env != nil {
			var err error
			if tel, err = Setup(context.Background(), Options{Getenv: envOf(env)}); err != nil {
				t.Fatal(err)
			}
			if tel.tp != nil {
				t.Fatalf("%v: a tracer provider was made", env)
			}
		}
		ctx, run := tel.Start(context.Background(), "astra run-due", Parent(incoming))
		tctx, task := tel.Start(ctx, "astra task alpha", TraceID("4bf92f3577b34da6a3ce929d0e0e4736"), SpanID("00f067aa0ba902b7"), Attrs(AttrTool, "x"))
		_, step := tel.Start(tctx, "astra task gamma", SpanID("53995c3f42cd8ad8"))
		step.SetAttrs(AttrAction, "ran")
		step.End(errors.New("boom"))
		task.End(nil)
		run.End(nil)
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if run.TraceID() != "0af7651916cd43dd8448eb211c80319c" || task.TraceParent() != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" ||
			step.TraceParent() != "00-4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8-01" {
			t.Errorf("%v: ids run %s, task %s, step %s", env, run.TraceParent(), task.TraceParent(), step.TraceParent())
		}
		if after := otelGoroutines(); after > before {
			t.Errorf("%v: %d OpenTelemetry goroutines, %d before", env, after, before)
		}
	}
	if rec.hits() != 0 {
		t.Fatalf("the receiver got %d requests", rec.hits())
	}
	var s *Span
	s.SetAttrs(AttrTool, "x")
	s.End(nil)
	if s.TraceParent() != "" || s.TraceID() != "" {
		t.Fatal("a nil span has ids")
	}
}

// TestUnreachableCollector: a refused or stalled collector costs Shutdown
// at most its bound and is reported as an error, over both transports.
func TestUnreachableCollector(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	stalled, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := stalled.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { stalled.Close() })
	for _, addr := range []string{closed.Addr().String(), stalled.Addr().String()} {
		for _, protocol := range []string{"http/protobuf", "grpc"} {
			tel, err := Setup(context.Background(), Options{Getenv: envOf(map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			})})
			if err != nil {
				t.Fatal(err)
			}
			_, s := tel.Start(context.Background(), "astra run-due")
			s.End(nil)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err = tel.Shutdown(ctx)
			cancel()
			t.Logf("%s: %v", protocol, err)
			if err == nil || !strings.HasPrefix(err.Error(), "tracing: spans not exported to http://"+addr) {
				t.Errorf("%s %s: Shutdown error %v", protocol, addr, err)
			}
		}
	}
}

// TestShutdownAfterCancel: an interrupted run (its context cancelled) still
// flushes its spans.
func TestShutdownAfterCancel(t *testing.T) {
	rec, url := newHTTPReceiver(t)
	tel, err := Setup(context.Background(), Options{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, s := tel.Start(ctx, "astra run-due")
	cancel()
	s.End(context.Canceled)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if spans, _ := rec.spans(t); spans["astra run-due"] == nil {
		t.Fatal("the interrupted run's span was not exported")
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		url, err string // the traces URL, or an error naming the variable
	}{
		{env: map[string]string{}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318"}, url: "https://collector.example:4318/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example/otlp/"}, url: "https://collector.example/otlp/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other"}, url: "http://c:4318/custom"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, url: "http://c:4317"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "TRUE"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT: want an http:// or https:// URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://" + secret + "@c"}, err: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: want an http:// or https:// URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL: want http/protobuf, grpc or http/json"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, err: "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: want gzip or none"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER: astra exports traces with otlp only"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer " + secret + ",oops"}, err: "OTEL_EXPORTER_OTLP_HEADERS: item 2 is not key=value"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=" + secret + "%zz"}, err: "OTEL_EXPORTER_OTLP_HEADERS: item 1 (authorization): bad percent-encoding"},
	} {
		c, err := readConfig(envOf(tc.env), traces)
		switch {
		case tc.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || strings.Contains(err.Error(), secret) {
				t.Errorf("%v: error %v, want %q without the value", tc.env, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.url == "" && c != nil:
			t.Errorf("%v: exports to %s, want nothing", tc.env, c.url)
		case tc.url != "" && (c == nil || c.url.String() != tc.url):
			t.Errorf("%v: config %+v, want URL %s", tc.env, c, tc.url)
		}
	}
	c, err := readConfig(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:" + secret + "@c", "OTEL_SERVICE_NAME": "astra-ci"}), traces)
	if err != nil {
		t.Fatal(err)
	}
	if c.service != "astra-ci" || strings.Contains(c.shown(), secret) {
		t.Errorf("service %q, endpoint shown as %s", c.service, c.shown())
	}
}

func TestParseTraceParent(t *testing.T) {
	for _, tc := range []struct{ in, trace, span string }{
		{incoming, "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"},
		{"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future", "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"},
		{"", "", ""},
		{"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", "", ""},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", "", ""},
		{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "", ""},
		{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", ""},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", "", ""},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01", "", ""},
	} {
		trace, span, ok := ParseTraceParent(tc.in)
		if trace != tc.trace || span != tc.span || ok != (tc.trace != "") {
			t.Errorf("ParseTraceParent(%q) = %q, %q, %v", tc.in, trace, span, ok)
		}
	}
}

// TestErrorType: a failed span's error.type is a run's reason word, else
// the error's kind, else "_OTHER".
func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Failure("exit", "exit status 1"), "exit"},
		{fmt.Errorf("wrapped: %w", Failure("budget_exceeded", "over")), "budget_exceeded"},
		{errkind.Infraf("GitHub answered 502"), "infrastructure"},
		{errkind.Usagef("no such schedule"), "usage"},
		{errors.New("plain"), "_OTHER"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
