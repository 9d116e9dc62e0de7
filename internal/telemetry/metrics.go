package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Metric and attribute names.
const (
	MetricRuns        = "astra.runs"              // counter: tasks by outcome
	MetricDuration    = "astra.run.duration"      // histogram, seconds: how long each task's tool ran
	MetricSpend       = "astra.spend"             // counter, USD: what tasks spent
	MetricApprovals   = "astra.approvals.pending" // gauge: approval requests waiting, after the run
	MetricDeadLetters = "astra.dead_letters"      // gauge: dead letters waiting, after the run
	AttrCommand       = "astra.command"
	AttrOutcome       = "astra.outcome"
)

// Run is what one astra command exports as metrics.
type Run struct {
	Command          string // run-due, run, trigger, rollback
	Tasks            []Task
	ApprovalsPending int
	DeadLetters      int
}

// Task is one outcome of a run.
type Task struct {
	Schedule, Tool string
	Outcome        string        // ran, failed, skipped, ...
	Duration       time.Duration // 0: the tool did not run
	SpendUSD       float64
}

// MetricsOn reports whether getenv asks for metrics (ExportMetrics says
// what is wrong with a configuration that does not hold), so a caller
// gathers them only then.
func MetricsOn(getenv func(string) string) bool {
	cfg, err := readConfig(getenv, metrics)
	return cfg != nil || err != nil
}

// ExportMetrics sends run's metrics once over OTLP, to the endpoint and
// with the protocol, headers and compression the spans use (the
// OTEL_EXPORTER_OTLP_METRICS_* variants first, /v1/metrics below a base
// endpoint); OTEL_METRICS_EXPORTER=none or OTEL_SDK_DISABLED=true turn it
// off. astra is a command, not a daemon: there is no periodic export, and
// counters are the run's own (delta temporality). It waits at most
// FlushTimeout; the error, for a warning, never quotes credentials.
// http/json is sent as http/protobuf: the metric exporter has no JSON.
func ExportMetrics(ctx context.Context, o Options, run Run) error {
	getenv, redact := o.Getenv, o.Redact
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	cfg, err := readConfig(getenv, metrics)
	if err != nil || cfg == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	fail := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) {
			err = errors.New("the collector did not take them in time")
		}
		return errors.New(redact(fmt.Sprintf("metrics: not exported to %s: %v", cfg.shown(), err)))
	}
	res, err := cfg.resource(ctx, o.Version)
	if err != nil {
		return fail(err)
	}
	exp, err := cfg.newMetricExporter(ctx)
	if err != nil {
		return fail(err)
	}
	defer exp.Shutdown(context.WithoutCancel(ctx))
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	if err := record(ctx, mp.Meter("github.com/astra-gitops/astra"), run, redact); err != nil {
		return fail(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return fail(err)
	}
	if err := exp.Export(ctx, &rm); err != nil {
		return fail(err)
	}
	return nil
}

// record records run on meter's instruments.
func record(ctx context.Context, meter metric.Meter, run Run, redact func(string) string) error {
	runs, err1 := meter.Int64Counter(MetricRuns, metric.WithUnit("{run}"), metric.WithDescription("tasks by outcome"))
	dur, err2 := meter.Float64Histogram(MetricDuration, metric.WithUnit("s"), metric.WithDescription("how long each task's tool ran"))
	spend, err3 := meter.Float64Counter(MetricSpend, metric.WithUnit("USD"), metric.WithDescription("what tasks spent"))
	approvals, err4 := meter.Int64Gauge(MetricApprovals, metric.WithUnit("{approval}"), metric.WithDescription("approval requests waiting after the run"))
	dead, err5 := meter.Int64Gauge(MetricDeadLetters, metric.WithUnit("{slot}"), metric.WithDescription("dead letters waiting after the run"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return err
	}
	command := attribute.String(AttrCommand, run.Command)
	for _, t := range run.Tasks {
		set := metric.WithAttributes(command, attribute.String(AttrScheduleID, redact(t.Schedule)), attribute.String(AttrTool, redact(t.Tool)),
			attribute.String(AttrOutcome, t.Outcome))
		runs.Add(ctx, 1, set)
		if t.Duration > 0 {
			dur.Record(ctx, t.Duration.Seconds(), set)
		}
		if t.SpendUSD > 0 {
			spend.Add(ctx, t.SpendUSD, set)
		}
	}
	approvals.Record(ctx, int64(run.ApprovalsPending), metric.WithAttributes(command))
	dead.Record(ctx, int64(run.DeadLetters), metric.WithAttributes(command))
	return nil
}

// newMetricExporter is newExporter's twin for metrics: every setting
// explicit, no connection before the export.
func (c *config) newMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	if c.protocol == "grpc" {
		creds := insecure.NewCredentials()
		if c.url.Scheme == "https" {
			creds = credentials.NewTLS(nil)
		}
		opts := []otlpmetricgrpc.Option{
			otlpmetricgrpc.WithEndpointURL(c.url.String()),
			otlpmetricgrpc.WithTLSCredentials(creds),
			otlpmetricgrpc.WithHeaders(c.headers),
			otlpmetricgrpc.WithTimeout(FlushTimeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig(retry)),
		}
		if c.gzip {
			opts = append(opts, otlpmetricgrpc.WithCompressor("gzip"))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	comp := otlpmetrichttp.NoCompression
	if c.gzip {
		comp = otlpmetrichttp.GzipCompression
	}
	return otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(c.url.String()),
		otlpmetrichttp.WithTLSClientConfig(nil),
		otlpmetrichttp.WithHeaders(c.headers),
		otlpmetrichttp.WithCompression(comp),
		otlpmetrichttp.WithTimeout(FlushTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig(retry)),
	)
}
