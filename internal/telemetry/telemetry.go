// Package telemetry exports astra's runs and tasks as OpenTelemetry spans
// over OTLP, when the standard OTEL_EXPORTER_OTLP_* variables ask for it.
//
// Spans carry astra's own W3C ids: a task's span has the task's ledger trace
// id and the span id astra derives from its run id, so the traceparent a
// tool receives is the span that recorded it, and `astra tasks by-trace`
// finds what a tracing backend shows. Without an endpoint, Setup returns a
// Tracer that exports nothing and starts no goroutine; its spans still carry
// the same ids.
//
//	tel, err := telemetry.Setup(ctx, telemetry.Options{Getenv: os.Getenv, Redact: red.String, Version: version})
//	if err != nil { ... } // a malformed OTEL_* variable
//	defer tel.Shutdown(ctx) // bounded flush; report its error as a warning
//	ctx, run := tel.Start(ctx, "astra run-due", telemetry.Parent(os.Getenv("TRACEPARENT")))
//	defer run.End(nil)
//	tctx, task := tel.Start(ctx, "astra task nightly", telemetry.TraceID(traceID), telemetry.SpanID(spanID),
//		telemetry.Attrs(telemetry.AttrTool, "deploy", telemetry.AttrTier, 2))
//	task.End(err)
//
// Settings come from Options.Getenv; the SDK's own reading of the process
// environment is overridden, except that it adds OTEL_RESOURCE_ATTRIBUTES to
// the resource (astra's service.name and service.version win).
package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// FlushTimeout bounds Shutdown: an unreachable or stalled collector costs a
// run at most this long.
const FlushTimeout = 5 * time.Second

// exportTimeout bounds one batch export, retries included, so a stalled
// collector never holds a background export for long either.
const exportTimeout = 10 * time.Second

// Options configure Setup.
type Options struct {
	Getenv  func(string) string // the environment (os.Getenv in the CLI)
	Redact  func(string) string // applied to every string attribute, span name and error message
	Version string              // service.version
}

// Tracer starts spans. A nil *Tracer, or one set up without an endpoint,
// exports nothing; its spans still carry ids.
type Tracer struct {
	tp       *sdktrace.TracerProvider // nil: nothing is recorded
	tracer   trace.Tracer
	exp      *quietExporter
	redact   func(string) string
	endpoint string // for messages, without credentials
}

// Setup reads the OpenTelemetry variables and returns a Tracer exporting
// over OTLP to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), with the protocol of
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default), grpc or
// http/json. Without an endpoint, or with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none, the Tracer exports nothing. A malformed
// variable is an error naming it (never its value); the nil Tracer
// returned with it is a valid no-op.
func Setup(ctx context.Context, o Options) (*Tracer, error) {
	getenv, redact := o.Getenv, o.Redact
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	cfg, err := readConfig(getenv, traces)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return &Tracer{redact: redact}, nil
	}
	res, err := cfg.resource(ctx, o.Version)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	client, err := cfg.newExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	exp := &quietExporter{SpanExporter: client}
	tp := sdktrace.NewTracerProvider(
		// The SDK adds OTEL_RESOURCE_ATTRIBUTES from the process
		// environment; ours win.
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(idGenerator{}),
		// Explicit settings throughout: the SDK would otherwise read
		// OTEL_TRACES_SAMPLER, OTEL_BSP_* and OTEL_SPAN_* from the process.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: 4096, AttributeCountLimit: 128, EventCountLimit: 128, LinkCountLimit: 128,
			AttributePerEventCountLimit: 128, AttributePerLinkCountLimit: 128,
		}),
		sdktrace.WithBatcher(exp,
			sdktrace.WithBatchTimeout(5*time.Second), sdktrace.WithExportTimeout(exportTimeout),
			sdktrace.WithMaxQueueSize(sdktrace.DefaultMaxQueueSize), sdktrace.WithMaxExportBatchSize(sdktrace.DefaultMaxExportBatchSize)),
	)
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/astra-gitops/astra"), exp: exp, redact: redact, endpoint: cfg.shown()}, nil
}

// Shutdown exports the spans not yet sent and stops the exporter. It waits
// at most FlushTimeout, or until ctx's deadline if sooner; a cancelled ctx
// (an interrupted run) still gets its flush. The error says why spans were
// lost (the first failed export, or the time running out); report it as a
// warning: tracing never fails a run.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	deadline := time.Now().Add(FlushTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	err := t.tp.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the collector did not take the spans in time")
	}
	if err = errors.Join(t.exp.failure(), err); err != nil {
		return errors.New(t.redact(fmt.Sprintf("tracing: spans not exported to %s: %v", t.endpoint, err)))
	}
	return nil
}

// quietExporter remembers the first failed export for Shutdown to report,
// rather than letting the SDK log every failed batch on stderr.
type quietExporter struct {
	sdktrace.SpanExporter
	mu  sync.Mutex
	err error
}

func (e *quietExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
	return nil
}

func (e *quietExporter) failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// resource describes astra as the source of what is exported. The SDK adds
// OTEL_RESOURCE_ATTRIBUTES from the process environment; ours win.
func (c *config) resource(ctx context.Context, version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", c.service)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
}

// signal is one kind of telemetry astra exports, with the variables and
// the path that are its own.
type signal struct {
	name     string // TRACES, METRICS: OTEL_EXPORTER_OTLP_<name>_* win over OTEL_EXPORTER_OTLP_*
	exporter string // the variable choosing its exporter
	path     string // below a base OTEL_EXPORTER_OTLP_ENDPOINT
}

var (
	traces  = signal{"TRACES", "OTEL_TRACES_EXPORTER", "v1/traces"}
	metrics = signal{"METRICS", "OTEL_METRICS_EXPORTER", "v1/metrics"}
)

// config is what the environment asks for; nil means no export.
type config struct {
	url      *url.URL // the signal's endpoint, path included for HTTP
	protocol string   // grpc, http/protobuf or http/json
	gzip     bool
	headers  map[string]string
	service  string
}

// readConfig reads the OTEL_* variables astra supports for sig.
func readConfig(getenv func(string) string, sig signal) (*config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	if on, err := exporting(get, sig); !on || err != nil {
		return nil, err
	}
	// The signal-specific variables win over the generic ones.
	signal := func(name string) (string, string) {
		if v := get("OTEL_EXPORTER_OTLP_" + sig.name + "_" + name); v != "" {
			return "OTEL_EXPORTER_OTLP_" + sig.name + "_" + name, v
		}
		return "OTEL_EXPORTER_OTLP_" + name, get("OTEL_EXPORTER_OTLP_" + name)
	}
	endpointVar, endpoint := signal("ENDPOINT")
	if endpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: want an http:// or https:// URL", endpointVar)
	}
	c := &config{url: u, service: cmp.Or(get("OTEL_SERVICE_NAME"), "astra")}
	switch name, p := signal("PROTOCOL"); p {
	case "", "http/protobuf", "http/json", "grpc":
		c.protocol = cmp.Or(p, "http/protobuf")
	default:
		return nil, fmt.Errorf("%s: want http/protobuf, grpc or http/json, not %q", name, p)
	}
	if endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" && c.protocol != "grpc" {
		// A base URL: the signal's path goes below it.
		u.Path = path.Join("/", u.Path, sig.path)
	}
	switch name, v := signal("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("%s: want gzip or none, not %q", name, v)
	}
	name, v := signal("HEADERS")
	if c.headers, err = parsePairs(v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err) // never the value: it holds credentials
	}
	return c, nil
}

// exporting reports whether the SDK and the signal's exporter are on (the
// exporter being otlp, the only one astra has).
func exporting(get func(string) string, sig signal) (bool, error) {
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch e := get(sig.exporter); e {
	case "none":
		return false, nil
	case "", "otlp":
		return true, nil
	default:
		return false, fmt.Errorf("%s: astra exports %s with otlp only (or none), not %q", sig.exporter, strings.ToLower(sig.name), e)
	}
}

// parsePairs reads OTEL_EXPORTER_OTLP_HEADERS' "key=value,key=value",
// values percent-decoded.
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("item %d is not key=value", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("item %d (%s): bad percent-encoding", i+1, k)
		}
		out[k] = dv
	}
	return out, nil
}

// retry retries a failed export briefly: within one export's bound.
var retry = struct {
	Enabled                                      bool
	InitialInterval, MaxInterval, MaxElapsedTime time.Duration
}{true, time.Second, 4 * time.Second, exportTimeout}

// newExporter makes the OTLP exporter. Every setting is given explicitly, so
// the exporters' own reading of the process environment never takes
// effect (except a gzip OTEL_EXPORTER_OTLP_COMPRESSION for gRPC, which the
// gRPC exporter cannot be told to undo). Neither connects before the first
// export.
func (c *config) newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if c.protocol == "grpc" {
		creds := insecure.NewCredentials()
		if c.url.Scheme == "https" {
			creds = credentials.NewTLS(nil)
		}
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpointURL(c.url.String()),
			otlptracegrpc.WithTLSCredentials(creds),
			otlptracegrpc.WithHeaders(c.headers),
			otlptracegrpc.WithTimeout(exportTimeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(retry)),
		}
		if c.gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	enc, comp := otlptracehttp.EncodingProtobuf, otlptracehttp.NoCompression
	if c.protocol == "http/json" {
		enc = otlptracehttp.EncodingJSON
	}
	if c.gzip {
		comp = otlptracehttp.GzipCompression
	}
	return otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(c.url.String()),
		otlptracehttp.WithTLSClientConfig(nil),
		otlptracehttp.WithHeaders(c.headers),
		otlptracehttp.WithEncoding(enc),
		otlptracehttp.WithCompression(comp),
		otlptracehttp.WithTimeout(exportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig(retry)),
	)
}

// shown is the endpoint for messages: no user or password.
func (c *config) shown() string { return c.url.Redacted() }
