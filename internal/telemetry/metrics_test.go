package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// metricsReceiver is an OTLP/HTTP metrics endpoint keeping what it got.
func metricsReceiver(t *testing.T) (string, func() []*colmetricspb.ExportMetricsServiceRequest) {
	var mu sync.Mutex
	var got []*colmetricspb.ExportMetricsServiceRequest
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		w.Write(out)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, func() []*colmetricspb.ExportMetricsServiceRequest {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// byName flattens the metrics of requests.
func byName(reqs []*colmetricspb.ExportMetricsServiceRequest) map[string]*metricspb.Metric {
	out := map[string]*metricspb.Metric{}
	for _, req := range reqs {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out[m.Name] = m
				}
			}
		}
	}
	return out
}

// TestExportMetrics sends one run's metrics to a real OTLP/HTTP receiver,
// with the headers the spans use: runs by outcome, each tool's duration,
// spend, and the approvals and dead letters left.
func TestExportMetrics(t *testing.T) {
	url, received := metricsReceiver(t)
	env := envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20tok"})
	run := Run{Command: "run-due", ApprovalsPending: 2, DeadLetters: 1, Tasks: []Task{
		{Schedule: "a", Tool: "t", Outcome: "ran", Duration: 1500 * time.Millisecond, SpendUSD: 0.25},
		{Schedule: "b", Tool: "t", Outcome: "failed", Duration: 500 * time.Millisecond},
		{Schedule: "c", Tool: "t", Outcome: "skipped"},
	}}
	if err := ExportMetrics(context.Background(), Options{Getenv: env, Version: "v1"}, run); err != nil {
		t.Fatal(err)
	}
	reqs := received()
	if len(reqs) != 1 {
		t.Fatalf("%d exports, want one at the end of the run", len(reqs))
	}
	ms := byName(reqs)
	runs := ms[MetricRuns].GetSum()
	if runs == nil || len(runs.DataPoints) != 3 || runs.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA {
		t.Fatalf("runs: %v", ms[MetricRuns])
	}
	outcomes := map[string]int64{}
	for _, dp := range runs.DataPoints {
		outcomes[attr(dp.Attributes, AttrOutcome).GetStringValue()] += dp.GetAsInt()
		if attr(dp.Attributes, AttrCommand).GetStringValue() != "run-due" {
			t.Errorf("a data point without its command: %v", dp.Attributes)
		}
	}
	if outcomes["ran"] != 1 || outcomes["failed"] != 1 || outcomes["skipped"] != 1 {
		t.Errorf("runs by outcome %v", outcomes)
	}
	var seconds float64
	for _, dp := range ms[MetricDuration].GetHistogram().GetDataPoints() {
		seconds += dp.GetSum()
	}
	if seconds != 2 {
		t.Errorf("durations sum to %vs, want 2s (a skipped task has none)", seconds)
	}
	if dps := ms[MetricSpend].GetSum().GetDataPoints(); len(dps) != 1 || dps[0].GetAsDouble() != 0.25 {
		t.Errorf("spend %v", dps)
	}
	if dps := ms[MetricApprovals].GetGauge().GetDataPoints(); len(dps) != 1 || dps[0].GetAsInt() != 2 {
		t.Errorf("approvals pending %v", dps)
	}
	if dps := ms[MetricDeadLetters].GetGauge().GetDataPoints(); len(dps) != 1 || dps[0].GetAsInt() != 1 {
		t.Errorf("dead letters %v", dps)
	}
}

// Off unless asked, and a collector that is down is an error for a
// warning, without the credentials in the endpoint.
func TestExportMetricsOffAndDown(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_METRICS_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		if MetricsOn(envOf(env)) {
			t.Errorf("%v: metrics on", env)
		}
		if err := ExportMetrics(context.Background(), Options{Getenv: envOf(env)}, Run{Command: "run-due"}); err != nil {
			t.Errorf("%v: %v", env, err)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	err := ExportMetrics(context.Background(), Options{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": strings.Replace(srv.URL, "http://", "http://u:s3cret@", 1) + "/m"})},
		Run{Command: "run-due"})
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: not exported to http://u:xxxxx@") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("%v", err)
	}
	if err := ExportMetrics(context.Background(), Options{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "prometheus"})}, Run{}); err == nil ||
		!strings.Contains(err.Error(), "OTEL_METRICS_EXPORTER: astra exports metrics with otlp only") {
		t.Fatalf("%v", err)
	}
}
