package telemetry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/astra-gitops/astra/internal/errkind"
)

// Span attribute names: stable, under astra's own prefix.
const (
	AttrScheduleID     = "astra.schedule.id"
	AttrScheduleName   = "astra.schedule.name"
	AttrTenant         = "astra.tenant"
	AttrSlot           = "astra.slot"
	AttrIdempotencyKey = "astra.idempotency_key"
	AttrRunID          = "astra.run_id"
	AttrAttempt        = "astra.attempt"
	AttrMode           = "astra.mode"
	AttrTool           = "astra.tool"
	AttrTier           = "astra.tier"
	AttrActor          = "astra.actor"
	AttrAction         = "astra.action"
	AttrReason         = "astra.reason"
	AttrUsageTokens    = "astra.usage.tokens"
	AttrUsageCostUSD   = "astra.usage.cost_usd"
	AttrUsageToolCalls = "astra.usage.tool_calls"
	AttrDryRun         = "astra.dry_run"
	AttrAutonomy       = "astra.autonomy" // the schedule's autonomy level, L0..L3
	// AttrErrorType is OpenTelemetry's error.type: on a failed span, the
	// class of the failure (a run's reason word, exit or lost; an
	// error's kind, usage or infrastructure), "_OTHER" when it has none.
	AttrErrorType = "error.type"
)

// StartOption adjusts a span started by Start.
type StartOption func(*startConfig)

type startConfig struct {
	traceID trace.TraceID
	spanID  trace.SpanID
	parent  trace.SpanContext
	links   []trace.Link
	kind    trace.SpanKind
	attrs   []any
}

// TraceID puts the span in this trace (32 hex digits, astra's ledger
// trace id). An invalid id is ignored.
func TraceID(hexID string) StartOption {
	return func(c *startConfig) { c.traceID, _ = trace.TraceIDFromHex(hexID) }
}

// SpanID gives the span this id (16 hex digits), such as the one astra
// derives from a run id and hands to tools. An invalid id is ignored.
func SpanID(hexID string) StartOption {
	return func(c *startConfig) { c.spanID, _ = trace.SpanIDFromHex(hexID) }
}

// Parent makes the span a child of a remote span given as a W3C
// traceparent (the TRACEPARENT a triggering system set), instead of the
// span in the context. An empty or malformed traceparent is ignored; one
// its caller did not sample (flags 00) leaves the spans of its trace
// unrecorded, as parent-based sampling does.
func Parent(traceparent string) StartOption {
	return func(c *startConfig) { c.parent = parse(traceparent) }
}

// Link links the span to another, given as a W3C traceparent (a retry's
// previous attempt, say). An empty or malformed traceparent is ignored.
func Link(traceparent string) StartOption {
	return func(c *startConfig) {
		if sc := parse(traceparent); sc.IsValid() {
			c.links = append(c.links, trace.Link{SpanContext: sc})
		}
	}
}

// Kind sets the span kind (internal by default).
func Kind(k trace.SpanKind) StartOption {
	return func(c *startConfig) { c.kind = k }
}

// Attrs sets attributes: alternating keys and values, as for SetAttrs.
func Attrs(kv ...any) StartOption {
	return func(c *startConfig) { c.attrs = append(c.attrs, kv...) }
}

// Span is a started span. Its methods do nothing on a nil Span or one that
// is not recorded.
type Span struct {
	t    *Tracer
	span trace.Span
}

// Start starts a span and returns a context carrying it. The parent is
// Parent's, else the span in ctx. Given a TraceID of another trace than
// that parent's, the span starts that trace and links to the parent
// instead: a task keeps its ledger trace (shared by its retries and
// chained steps) and still points at the run that executed it.
func (t *Tracer) Start(ctx context.Context, name string, opts ...StartOption) (context.Context, *Span) {
	c := startConfig{kind: trace.SpanKindInternal}
	for _, o := range opts {
		o(&c)
	}
	parent := c.parent
	if !parent.IsValid() {
		parent = trace.SpanContextFromContext(ctx)
	}
	if !c.traceID.IsValid() {
		c.traceID = parent.TraceID()
		if !parent.IsValid() {
			rand.Read(c.traceID[:])
		}
	}
	if parent.IsValid() && parent.TraceID() != c.traceID {
		c.links = append(c.links, trace.Link{SpanContext: parent})
		parent = trace.SpanContext{}
	}
	if !c.spanID.IsValid() {
		rand.Read(c.spanID[:])
	}
	flags := trace.FlagsSampled
	if parent.IsValid() {
		flags = parent.TraceFlags()
	}
	ids := trace.NewSpanContext(trace.SpanContextConfig{TraceID: c.traceID, SpanID: c.spanID, TraceFlags: flags})
	if t == nil || t.tp == nil {
		ctx = trace.ContextWithSpanContext(ctx, ids)
		return ctx, &Span{span: trace.SpanFromContext(ctx)}
	}

	// The SDK picks the parent from the context it is given and asks
	// idGenerator for the ids, which reads them from that context too. The
	// returned context is built on ctx, so the wanted ids do not leak to
	// later spans.
	sdkCtx := context.WithValue(ctx, idsKey{}, ids)
	so := []trace.SpanStartOption{trace.WithSpanKind(c.kind), trace.WithLinks(c.links...), trace.WithAttributes(t.attrs(c.attrs)...)}
	switch {
	case !parent.IsValid():
		so = append(so, trace.WithNewRoot())
	case c.parent.IsValid():
		sdkCtx = trace.ContextWithRemoteSpanContext(sdkCtx, parent)
	}
	_, span := t.tracer.Start(sdkCtx, t.redact(name), so...)
	return trace.ContextWithSpan(ctx, span), &Span{t: t, span: span}
}

// SetAttrs sets attributes from alternating keys and values. Strings
// (redacted), bools, ints, int64s, float64s, string slices (redacted) and
// times (RFC 3339, UTC) keep their type; other values are formatted with
// fmt and redacted. Nil values and empty strings are left out.
func (s *Span) SetAttrs(kv ...any) {
	if s.recording() {
		s.span.SetAttributes(s.t.attrs(kv)...)
	}
}

// End ends the span; a non-nil err marks it failed with err's redacted
// message and its error.type (ErrorType).
func (s *Span) End(err error) {
	if !s.recording() {
		return
	}
	if err != nil {
		s.span.SetStatus(codes.Error, s.t.redact(err.Error()))
		s.span.SetAttributes(attribute.String(AttrErrorType, ErrorType(err)))
	}
	s.span.End()
}

// Failure is an error of class typ (a run's reason word) for End.
func Failure(typ, msg string) error { return &failure{typ, msg} }

type failure struct{ typ, msg string }

func (f *failure) Error() string { return f.msg }

// ErrorType is err's error.type: a Failure's class, else its errkind
// (usage, refused, ledger, infrastructure, failed), else "_OTHER", as the
// semantic conventions name an error of no known class.
func ErrorType(err error) string {
	var f *failure
	switch {
	case errors.As(err, &f) && f.typ != "":
		return f.typ
	case errkind.Of(err) != nil:
		return errkind.Of(err).Error()
	}
	return "_OTHER"
}

// TraceParent is the span's W3C traceparent ("00-<trace>-<span>-<flags>").
func (s *Span) TraceParent() string {
	if s == nil {
		return ""
	}
	sc := s.span.SpanContext()
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// TraceID is the span's trace id, 32 hex digits.
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	return s.span.SpanContext().TraceID().String()
}

func (s *Span) recording() bool { return s != nil && s.t != nil && s.span.IsRecording() }

// ParseTraceParent splits a W3C traceparent into its trace and span ids;
// ok is false when it is malformed or its ids are zero.
func ParseTraceParent(s string) (traceID, spanID string, ok bool) {
	sc := parse(s)
	if !sc.IsValid() {
		return "", "", false
	}
	return sc.TraceID().String(), sc.SpanID().String(), true
}

func parse(traceparent string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// idsKey carries the ids Start wants to the SDK's id generator.
type idsKey struct{}

// idGenerator hands the SDK the ids Start chose, so that spans carry
// astra's deterministic ids. Start always puts them in the context.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	sc := ctx.Value(idsKey{}).(trace.SpanContext)
	return sc.TraceID(), sc.SpanID()
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	return ctx.Value(idsKey{}).(trace.SpanContext).SpanID()
}

// attrs converts alternating keys and values into attributes.
func (t *Tracer) attrs(kv []any) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k := fmt.Sprint(kv[i])
		switch v := kv[i+1].(type) {
		case nil:
		case string:
			if v != "" {
				out = append(out, attribute.String(k, t.redact(v)))
			}
		case bool:
			out = append(out, attribute.Bool(k, v))
		case int:
			out = append(out, attribute.Int(k, v))
		case int64:
			out = append(out, attribute.Int64(k, v))
		case float64:
			out = append(out, attribute.Float64(k, v))
		case []string:
			red := make([]string, len(v))
			for j, s := range v {
				red[j] = t.redact(s)
			}
			out = append(out, attribute.StringSlice(k, red))
		case time.Time:
			if !v.IsZero() {
				out = append(out, attribute.String(k, v.UTC().Format(time.RFC3339)))
			}
		default:
			out = append(out, attribute.String(k, t.redact(fmt.Sprint(v))))
		}
	}
	return out
}
