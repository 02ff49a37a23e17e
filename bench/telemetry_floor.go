package bench

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// telemetryFloor wraps the floor's handler in the least telemetry an MCP
// server can emit per request under the MCP semantic conventions, to
// separate what the OpenTelemetry SDK itself costs from what lifeline's
// telemetry adds (cmd/otelcost -peer floor): with tp, one SERVER span per
// request with the attributes lifeline's span has (fixed values: no
// parsing); with mp, one mcp.server.operation.duration record with a
// prebuilt attribute set. Either may be nil.
func telemetryFloor(h http.Handler, mp metric.MeterProvider, tp trace.TracerProvider) http.Handler {
	f := &floorTelemetry{next: h}
	if tp != nil {
		f.tracer = tp.Tracer("lifeline-bench-floor")
	}
	if mp != nil {
		hist, err := mp.Meter("lifeline-bench-floor").Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"))
		if err == nil {
			f.dur = hist
			f.set = metric.WithAttributeSet(attribute.NewSet(semconv.McpMethodNameKey.String("tools/call"),
				semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"),
				semconv.McpProtocolVersion("2025-11-25"), semconv.GenAIToolName(ToolEcho)))
		}
	}
	return f
}

// floorTelemetry is telemetryFloor's handler.
type floorTelemetry struct {
	next   http.Handler
	tracer trace.Tracer
	dur    metric.Float64Histogram
	set    metric.MeasurementOption
}

// ServeHTTP serves r through next inside the span and the record.
func (f *floorTelemetry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if f.tracer != nil {
		ctx, span := f.tracer.Start(r.Context(), "tools/call "+ToolEcho, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.McpMethodNameKey.String("tools/call"), semconv.JSONRPCProtocolVersion("2.0"),
				semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"), semconv.JSONRPCRequestID("1"),
				semconv.McpProtocolVersion("2025-11-25"), semconv.McpSessionID("0123456789ab"), semconv.GenAIToolName(ToolEcho)))
		defer span.End()
		r = r.WithContext(ctx)
	}
	f.next.ServeHTTP(w, r)
	if f.dur != nil {
		f.dur.Record(r.Context(), time.Since(start).Seconds(), f.set)
	}
}
