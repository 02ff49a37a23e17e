package streamable_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// traceRig is a rig whose transport traces into a span recorder.
type traceRig struct {
	*rig
	rec *tracetest.SpanRecorder
}

func newTraceRig(t *testing.T, cfg streamable.Config, setup ...func(*server.MCPServer)) *traceRig {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) }) // after the rig's
	cfg.TracerProvider = tp
	cfg.Propagator = propagation.TraceContext{}
	return &traceRig{rig: newRig(t, cfg, setup...), rec: rec}
}

// span waits for the one ended span named name whose attributes include
// want, and returns it.
func (r *traceRig) span(name string, want ...attribute.KeyValue) sdktrace.ReadOnlySpan {
	r.t.Helper()
	var found []sdktrace.ReadOnlySpan
	testutil.Eventually(r.t, wait, "span "+name, func() bool {
		found = found[:0]
		for _, s := range r.rec.Ended() {
			if s.Name() == name && hasAttrs(s.Attributes(), want) {
				found = append(found, s)
			}
		}
		return len(found) > 0
	})
	if len(found) != 1 {
		r.t.Fatalf("%d spans %q with %v, want 1", len(found), name, want)
	}
	return found[0]
}

func hasAttrs(got, want []attribute.KeyValue) bool {
	for _, w := range want {
		if !hasAttr(got, w) {
			return false
		}
	}
	return true
}

func hasAttr(got []attribute.KeyValue, w attribute.KeyValue) bool {
	for _, g := range got {
		if g.Key == w.Key && g.Value == w.Value {
			return true
		}
	}
	return false
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// sessionName is how spans (and logs) name a session: the first 12 hex
// digits of its id's SHA-256.
func sessionName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

func traceparent(traceID, spanID string) string { return "00-" + traceID + "-" + spanID + "-01" }

const (
	headerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	headerSpan  = "00f067aa0ba902b7"
	metaTrace   = "0af7651916cd43dd8448eb211c80319c"
	metaSpan    = "b7ad6b7169203331"
)

func wantParent(t *testing.T, s sdktrace.ReadOnlySpan, traceID, spanID string) {
	t.Helper()
	if got := s.SpanContext().TraceID().String(); got != traceID {
		t.Fatalf("span %q: trace %s, want %s", s.Name(), got, traceID)
	}
	if got := s.Parent().SpanID().String(); got != spanID || !s.Parent().IsRemote() {
		t.Fatalf("span %q: parent %s (remote %v), want remote %s", s.Name(), got, s.Parent().IsRemote(), spanID)
	}
}

func TestTraceSpanPerRequestWithConventionAttributes(t *testing.T) {
	r := newTraceRig(t, streamable.Config{})
	c := r.session()
	ctx := testutil.Context(t, wait)
	sess := attribute.String("mcp.session.id", sessionName(c.SessionID))

	init := r.span("initialize", sess)
	if init.SpanKind() != trace.SpanKindServer {
		t.Fatalf("initialize span kind %v", init.SpanKind())
	}
	if !hasAttrs(init.Attributes(), []attribute.KeyValue{attribute.String("mcp.protocol.version", testutil.ProtocolVersion)}) {
		t.Fatalf("initialize attributes %v", init.Attributes())
	}
	for _, a := range init.Attributes() {
		if a.Key == "mcp.session.id" && a.Value.AsString() == c.SessionID {
			t.Fatal("a span holds the session id itself, the client's credential")
		}
	}

	// Parent from the HTTP headers.
	c.Header = map[string]string{"traceparent": traceparent(headerTrace, headerSpan)}
	resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("echo: %v %+v", err, resp)
	}
	echo := r.span("tools/call echo", attribute.String("jsonrpc.request.id", "call-1"))
	if echo.SpanKind() != trace.SpanKindServer || echo.Status().Code == codes.Error {
		t.Fatalf("echo span: kind %v status %v", echo.SpanKind(), echo.Status())
	}
	for _, want := range []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "echo"),
		attribute.String("mcp.protocol.version", testutil.ProtocolVersion), sess,
		attribute.String("jsonrpc.protocol.version", "2.0"), attribute.String("network.transport", "tcp"),
		attribute.String("network.protocol.name", "http"),
	} {
		if !hasAttr(echo.Attributes(), want) {
			t.Fatalf("echo span lacks %v: %v", want, echo.Attributes())
		}
	}
	if _, ok := attrOf(echo, "error.type"); ok {
		t.Fatalf("a successful call has error.type: %v", echo.Attributes())
	}
	wantParent(t, echo, headerTrace, headerSpan)

	// params._meta wins over the headers.
	resp, err = c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"},
			"_meta": map[string]any{"traceparent": traceparent(metaTrace, metaSpan), "tracestate": "k=v"}}})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("echo with _meta: %v %+v", err, resp)
	}
	meta := r.span("tools/call echo", attribute.String("jsonrpc.request.id", "7"))
	wantParent(t, meta, metaTrace, metaSpan)
	if got := meta.SpanContext().TraceState().Get("k"); got != "v" {
		t.Fatalf("tracestate from _meta: k=%q", got)
	}

	// A tool that reports an error, and a JSON-RPC error.
	c.Header = nil
	if _, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	toolErr := r.span("tools/call echo", attribute.String("jsonrpc.request.id", "8"))
	if !hasAttr(toolErr.Attributes(), attribute.String("error.type", "tool_error")) || toolErr.Status().Code != codes.Error {
		t.Fatalf("tool error span: %v %v", toolErr.Attributes(), toolErr.Status())
	}
	if toolErr.Parent().IsValid() {
		t.Fatalf("a request without trace context got parent %v", toolErr.Parent())
	}
	if _, err := c.Call(ctx, "no/such/method", nil); err != nil {
		t.Fatal(err)
	}
	rpcErr := r.span("no/such/method")
	code := fmt.Sprint(mcp.METHOD_NOT_FOUND)
	if !hasAttr(rpcErr.Attributes(), attribute.String("error.type", code)) || rpcErr.Status().Code != codes.Error ||
		!hasAttr(rpcErr.Attributes(), attribute.String("rpc.response.status_code", code)) {
		t.Fatalf("JSON-RPC error span: %v %v", rpcErr.Attributes(), rpcErr.Status())
	}
}

func TestTraceSSEBatchAndModernRequestsGetSpans(t *testing.T) {
	r := newTraceRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)

	// A POST answered with SSE (the tool sends progress).
	c := r.session()
	resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": "sse", "method": "tools/call",
		"params": map[string]any{"name": "lifeline_progress", "arguments": map[string]any{"steps": 2},
			"_meta": map[string]any{"progressToken": "p", "traceparent": traceparent(metaTrace, metaSpan)}}})
	if err != nil || !resp.IsSSE() {
		t.Fatalf("progress call: %v %+v", err, resp)
	}
	sse := r.span("tools/call lifeline_progress", attribute.String("jsonrpc.request.id", "sse"))
	wantParent(t, sse, metaTrace, metaSpan)

	// A batch: a span per request in it.
	old := session20250326(t, r.rig)
	postBatch(t, old,
		`{"jsonrpc":"2.0","id":"b1","method":"tools/call","params":{"name":"echo","arguments":{"text":"1"}}}`,
		`{"jsonrpc":"2.0","id":"b2","method":"ping"}`)
	b1 := r.span("tools/call echo", attribute.String("jsonrpc.request.id", "b1"))
	r.span("ping", attribute.String("jsonrpc.request.id", "b2"), attribute.String("mcp.protocol.version", "2025-03-26"))
	if !hasAttr(b1.Attributes(), attribute.String("mcp.session.id", sessionName(old.SessionID))) {
		t.Fatalf("batch element span: %v", b1.Attributes())
	}

	// A 2026-07-28 request: no MCP session, so no mcp.session.id.
	modern := r.modernPost(ctx, t, modernMsg("m1", "tools/call",
		map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}},
		map[string]any{"traceparent": traceparent(metaTrace, metaSpan)}), nil)
	if modern.Status != http.StatusOK {
		t.Fatalf("modern call: %d %s", modern.Status, modern.Body)
	}
	m := r.span("tools/call echo", attribute.String("jsonrpc.request.id", "m1"))
	wantParent(t, m, metaTrace, metaSpan)
	if _, ok := attrOf(m, "mcp.session.id"); ok {
		t.Fatalf("a 2026-07-28 request's span names a session: %v", m.Attributes())
	}
	if !hasAttr(m.Attributes(), attribute.String("mcp.protocol.version", mcp.ProtocolVersion20260728)) {
		t.Fatalf("modern span: %v", m.Attributes())
	}
}

// streamSpanWith waits for a lifeline.stream span of session c that has
// every event in events.
func (r *traceRig) streamSpanWith(c *testutil.Client, events ...string) sdktrace.ReadOnlySpan {
	r.t.Helper()
	s := r.span("lifeline.stream", attribute.String("mcp.session.id", sessionName(c.SessionID)))
	var got []string
	for _, e := range s.Events() {
		got = append(got, e.Name)
	}
	for _, e := range events {
		if !strings.Contains(strings.Join(got, ","), e) {
			r.t.Fatalf("lifeline.stream span events %v, want %v", got, events)
		}
	}
	if len(got) != len(events) {
		r.t.Fatalf("lifeline.stream span events %v, want %v", got, events)
	}
	return s
}

func TestTraceDeadPeerEvent(t *testing.T) {
	r := newTraceRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	ping, err := s.NextMatching(ctx, isPing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		t.Fatal("a stream whose client stopped answering pings was not closed")
	}
	r.streamSpanWith(c, "lifeline.peer.dead")
}

func TestTraceTakeoverEvent(t *testing.T) {
	r := newTraceRig(t, streamable.Config{HeartbeatInterval: 100 * time.Millisecond})
	ctx := testutil.Context(t, wait)
	// The silent stream's own heartbeat can find it dead before the new
	// GET's probe does (a dead peer, no takeover): then again, a few times.
	for try := 1; ; try++ {
		c := r.session()
		first := r.stream(c)
		ping, err := first.NextMatching(ctx, isPing)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		r.stream(c) // probes the silent first stream and takes over
		s := r.span("lifeline.stream", attribute.String("mcp.session.id", sessionName(c.SessionID)))
		var got []string
		for _, e := range s.Events() {
			got = append(got, e.Name)
		}
		if slices.Equal(got, []string{"lifeline.peer.dead", "lifeline.stream.taken_over"}) {
			return
		}
		if !slices.Equal(got, []string{"lifeline.peer.dead"}) || try == 3 {
			t.Fatalf("lifeline.stream span events %v, want [lifeline.peer.dead lifeline.stream.taken_over]", got)
		}
	}
}

func TestTraceWriteDeadlineEvents(t *testing.T) {
	t.Run("GET", func(t *testing.T) {
		r := newTraceRig(t, streamable.Config{WriteTimeout: 200 * time.Millisecond})
		c := r.session()
		stallStream(t, r.rig, c)
		r.streamSpanWith(c, "lifeline.write.deadline_exceeded")
	})
	t.Run("POST", func(t *testing.T) {
		r := newTraceRig(t, streamable.Config{QueueSize: 16, WriteTimeout: time.Minute, DisableEventLog: true}, floodRequestTool)
		c := r.session()
		ctx := testutil.Context(t, wait)
		body := `{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{"name":"flood_request"}}`
		sr, err := testutil.DialStalled(ctx, r.ts.URL, "POST", map[string]string{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Session-Id": c.SessionID, "MCP-Protocol-Version": testutil.ProtocolVersion,
		}, body)
		if err != nil {
			t.Fatal(err)
		}
		defer sr.Close()
		s := r.span("tools/call flood_request", attribute.String("jsonrpc.request.id", "flood"))
		var events []string
		for _, e := range s.Events() {
			events = append(events, e.Name)
		}
		if !strings.Contains(strings.Join(events, ","), "lifeline.write.deadline_exceeded") {
			t.Fatalf("the stalled request's span has events %v", events)
		}
	})
}
