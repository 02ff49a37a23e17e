package streamable_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The trace context in params._meta is W3C trace context by the MCP
// conventions, whatever the HTTP propagator: with a TracerProvider and no
// Propagator (the global one, a no-op until the application sets one) a
// request's span still has _meta's parent.
func TestTraceMetaParentWithoutAPropagator(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	r := &traceRig{rig: newRig(t, streamable.Config{TracerProvider: tp}), rec: rec}
	c := r.session()
	ctx := testutil.Context(t, wait)
	resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": "m1", "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"},
			"_meta": map[string]any{"traceparent": traceparent(metaTrace, metaSpan)}}})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("echo with _meta: %v %+v", err, resp)
	}
	wantParent(t, r.span("tools/call echo", attribute.String("jsonrpc.request.id", "m1")), metaTrace, metaSpan)
}
