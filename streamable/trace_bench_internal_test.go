package streamable

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestSpan is what a tools/call's span costs with an SDK
// TracerProvider that samples every span (batched to an exporter that
// drops them): lifeline's (startRequestSpan and endRequestSpan: params
// read, attributes built, parent found) against the bare minimum, one
// Start and End with the same attributes given as constants. The
// difference is lifeline's own share of its tracing cost.
func BenchmarkRequestSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	h := New(server.NewMCPServer("bench", "1.0.0"), Config{TracerProvider: tp, HeartbeatInterval: Disabled, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer func() { _ = h.Close() }()
	sess := newSession(h, strings.Repeat("a", 32))
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello, world"}}}`)
	env, f := parseEnvelope(body)
	if f != nil {
		b.Fatal(f.message)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set(headerProtocolVersion, "2025-11-25")
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(7), mcp.NewToolResultText("hello, world"))
	b.Run("lifeline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, span := h.startRequestSpan(context.Background(), r, sess, &env)
			endRequestSpan(span, resp)
		}
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		tracer := tp.Tracer(scopeName)
		for b.Loop() {
			_, span := tracer.Start(context.Background(), "tools/call echo", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(semconv.McpMethodNameKey.String("tools/call"), semconv.JSONRPCProtocolVersion("2.0"),
					semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"), semconv.JSONRPCRequestID("7"),
					semconv.McpProtocolVersion("2025-11-25"), semconv.McpSessionID("0123456789ab"), semconv.GenAIToolName("echo")))
			span.End()
		}
	})
}
