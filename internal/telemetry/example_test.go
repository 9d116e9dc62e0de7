package telemetry_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/astra-gitops/astra/internal/telemetry"
)

// A run continuing a triggering system's trace, a task in its own ledger
// trace with the span id handed to its tool, and the task's chained step.
// Without OTEL_EXPORTER_OTLP_ENDPOINT nothing is exported, but the spans
// carry the same ids.
func Example() {
	ctx := context.Background()
	env := map[string]string{"TRACEPARENT": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	tel, err := telemetry.Setup(ctx, telemetry.Options{Getenv: func(k string) string { return env[k] }, Version: "v1.0.0"})
	if err != nil {
		panic(err)
	}
	defer tel.Shutdown(ctx)

	ctx, run := tel.Start(ctx, "astra run-due", telemetry.Parent(env["TRACEPARENT"]))
	defer run.End(nil)
	fmt.Println("run in trace", run.TraceID())

	tctx, task := tel.Start(ctx, "astra task nightly", telemetry.TraceID("4bf92f3577b34da6a3ce929d0e0e4736"),
		telemetry.SpanID("00f067aa0ba902b7"), telemetry.Attrs(telemetry.AttrTool, "report", telemetry.AttrTier, 0))
	fmt.Println("TRACEPARENT for the tool:", task.TraceParent())

	_, step := tel.Start(tctx, "astra task publish", telemetry.SpanID("53995c3f42cd8ad8"))
	fmt.Println("chained step:", step.TraceParent())
	step.End(errors.New("exit status 1"))
	task.End(nil)
	// Output:
	// run in trace 0af7651916cd43dd8448eb211c80319c
	// TRACEPARENT for the tool: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// chained step: 00-4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8-01
}
