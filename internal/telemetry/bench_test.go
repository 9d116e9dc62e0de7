package telemetry

import (
	"context"
	"testing"
)

// benchTask starts and ends a task span with the attributes the runner
// sets, as a run does per task.
func benchTask(b *testing.B, tel *Tracer) {
	ctx, run := tel.Start(context.Background(), "astra run-due")
	b.ReportAllocs()
	for b.Loop() {
		_, s := tel.Start(ctx, "astra task nightly", TraceID("4bf92f3577b34da6a3ce929d0e0e4736"), SpanID("00f067aa0ba902b7"),
			Attrs(AttrScheduleID, "nightly", AttrSlot, "2026-11-23T09:00:00Z", AttrTool, "report", AttrTier, 1, AttrAttempt, 1))
		s.SetAttrs(AttrAction, "ran", AttrUsageTokens, int64(1200), AttrUsageCostUSD, 0.012, AttrUsageToolCalls, int64(3))
		s.End(nil)
	}
	run.End(nil)
}

func BenchmarkTaskSpanDisabled(b *testing.B) {
	tel, err := Setup(context.Background(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchTask(b, tel)
}

func BenchmarkTaskSpanExported(b *testing.B) {
	rec, url := newHTTPReceiver(b)
	tel, err := Setup(context.Background(), Options{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})})
	if err != nil {
		b.Fatal(err)
	}
	benchTask(b, tel)
	if err := tel.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if rec.hits() == 0 {
		b.Fatal("nothing exported")
	}
}
