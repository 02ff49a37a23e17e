package streamable_test

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// mcp.server.operation.duration counts every request: each element of a
// batch (protocol 2025-03-26), a POST answered as SSE, and a 2026-07-28
// request, each with its protocol version.
func TestMetricsOperationPerRequest(t *testing.T) {
	mr := newMeterRig(t)
	r := newRig(t, streamable.Config{MeterProvider: mr.mp})
	ctx := testutil.Context(t, wait)

	c := session20250326(t, r)
	jsonAnswers(t, postBatch(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"two"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"ping"}`,
	))
	old := attribute.String("mcp.protocol.version", "2025-03-26")

	s := r.session()
	resp, err := s.CallTool(ctx, "lifeline_progress", map[string]any{"steps": 2})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK || !resp.IsSSE() {
		t.Fatalf("lifeline_progress: %d (SSE %v) %s", resp.Status, resp.IsSSE(), resp.Body)
	}

	mresp := r.modernPost(ctx, t, modernMsg(5, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "m"}}, nil), nil)
	wantStatus(t, "2026-07-28 tools/call", mresp.Status, http.StatusOK, mresp.Body)
	modern := attribute.String("mcp.protocol.version", "2026-07-28")

	ms := mr.collect()
	ms.check(t, 2, "mcp.server.operation.duration", attrMethod("tools/call"), attrTool("echo"), old)
	ms.check(t, 1, "mcp.server.operation.duration", attrMethod("ping"), old)
	ms.check(t, 1, "mcp.server.operation.duration", attrMethod("tools/call"), attrTool("lifeline_progress"), attrVersion)
	ms.check(t, 1, "mcp.server.operation.duration", attrMethod("tools/call"), attrTool("echo"), modern)
	ms.atLeast(t, 1, "lifeline.http.responses", attrStatus(200), attrCause("stream"))
	ms.check(t, 0, "lifeline.streams.open", attrKind("post_sse")) // opened and closed again
}
