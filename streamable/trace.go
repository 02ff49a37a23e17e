package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Traces, through the OpenTelemetry trace API (the application installs
// the SDK): one SERVER span per MCP request a client sends, named and
// attributed as OpenTelemetry's MCP semantic conventions say (semconv
// v1.40.0), and the events of a stream's life that matter when reading a
// trace. With no provider installed nothing here runs on the request path
// but one check (tracing.on).

// Span events.
const (
	eventTakenOver      = "lifeline.stream.taken_over"
	eventPeerDead       = "lifeline.peer.dead"
	eventWriteDeadline  = "lifeline.write.deadline_exceeded"
	streamSpanName      = "lifeline.stream"
	attrStreamKind      = attribute.Key("lifeline.stream.kind")
	attrUnansweredPings = attribute.Key("lifeline.heartbeat.unanswered_pings")
)

// errTakenOver closes a stream whose client stopped answering pings for the
// client's new GET (on this replica or another): its peer is dead too.
var errTakenOver = fmt.Errorf("%w; taken over by the client's new stream", errDeadPeer)

// tracing is a Handler's tracer and propagator.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator // nil: otel.GetTextMapPropagator()
	off    bool                          // a noop provider was given
	// idle, when set, is OpenTelemetry's default global provider, the one
	// given (or the global when none was): tracing is off for as long as
	// otel.GetTracerProvider() still returns it, as it then makes only
	// non-recording spans.
	idle trace.TracerProvider
}

func newTracing(cfg Config) tracing {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	t := tracing{tracer: tp.Tracer(scopeName), prop: cfg.Propagator}
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		t.off = true
	}
	if isDefaultGlobal(tp) {
		t.idle = tp
	}
	return t
}

// isDefaultGlobal reports whether tp is OpenTelemetry's default global
// provider, which delegates to the one otel.SetTracerProvider installs and
// until then makes non-recording spans (that cost allocations).
func isDefaultGlobal(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().Name() == "tracerProvider" &&
		t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

// on reports whether spans are made: a provider other than a noop one is
// installed.
func (t *tracing) on() bool {
	if t.off {
		return false
	}
	return t.idle == nil || otel.GetTracerProvider() != t.idle
}

func (t *tracing) propagator() propagation.TextMapPropagator {
	if t.prop != nil {
		return t.prop
	}
	return otel.GetTextMapPropagator()
}

// startRequestSpan starts the SERVER span of one MCP request (env) of
// sess (nil for initialize, whose session is not made yet) from ctx, or
// returns ctx and nil when tracing is off. The parent is the trace context
// in params._meta when it has one, else the span ctx holds, else the one
// the HTTP headers carry.
func (h *Handler) startRequestSpan(ctx context.Context, r *http.Request, sess *session, env *envelope) (context.Context, trace.Span) {
	if !h.tracing.on() {
		return ctx, nil
	}
	var sessionID, version string
	if sess != nil {
		version = sess.ProtocolVersion()
		if !sess.stateless { // a stateless or 2026-07-28 request has no MCP session
			sessionID = sess.id
		}
	}
	p := readTarget(env.Params)
	prop := h.tracing.propagator()
	switch {
	case p.traceParent != "":
		// W3C trace context by the MCP conventions: read by the
		// configured propagator, else as W3C (the global propagator is a
		// no-op until the application sets one).
		meta := propagation.MapCarrier{"traceparent": p.traceParent, "tracestate": p.traceState}
		if pctx := prop.Extract(ctx, meta); !trace.SpanContextFromContext(pctx).Equal(trace.SpanContextFromContext(ctx)) {
			ctx = pctx // the propagator read _meta
		} else {
			ctx = propagation.TraceContext{}.Extract(ctx, meta)
		}
	case !trace.SpanContextFromContext(ctx).IsValid():
		ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	name := env.Method
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, semconv.McpMethodNameKey.String(env.Method),
		semconv.JSONRPCProtocolVersion(mcp.JSONRPC_VERSION),
		semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
	if len(env.ID) > 0 {
		attrs = append(attrs, semconv.JSONRPCRequestID(rpcIDString(env.ID)))
	}
	if version == "" {
		version = headerValue(r.Header, headerProtocolVersion)
	}
	if version != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(version))
	}
	if sessionID != "" {
		// The id is the client's credential: spans name the session as
		// logs do (logid.go).
		attrs = append(attrs, sess.spanID())
	}
	switch {
	case env.Method == string(mcp.MethodToolsCall) && p.name != "":
		name += " " + p.name
		attrs = append(attrs, semconv.GenAIToolName(p.name))
	case env.Method == string(mcp.MethodPromptsGet) && p.name != "":
		name += " " + p.name
		attrs = append(attrs, semconv.GenAIPromptName(p.name))
	case p.uri != "":
		attrs = append(attrs, semconv.McpResourceURI(p.uri))
	}
	return h.tracing.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// spanSessionID is the mcp.session.id attribute of a session: its log name
// (logid.go), as the id is the client's credential.
func spanSessionID(id string) attribute.KeyValue {
	return semconv.McpSessionID(logID(id).LogValue().String())
}

// spanID is spanSessionID of s, computed once (a digest per request
// otherwise).
func (s *session) spanID() attribute.KeyValue {
	if kv := s.spanAttr.Load(); kv != nil {
		return *kv
	}
	kv := spanSessionID(s.id)
	s.spanAttr.Store(&kv)
	return kv
}

// endRequestSpan ends a request's span with resp, its answer: an error
// answer, or a tool's result with isError, sets error.type and the Error
// status. span may be nil (tracing off).
func endRequestSpan(span trace.Span, resp mcp.JSONRPCMessage) {
	if span == nil {
		return
	}
	if errType, msg := responseError(resp); errType != "" {
		if errType != toolError {
			span.SetAttributes(semconv.RPCResponseStatusCode(errType))
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// endSpanFailed ends a request's span with the transport's own failure
// answer. span may be nil.
func endSpanFailed(span trace.Span, f *failure) {
	if span == nil {
		return
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(f.code)),
		semconv.RPCResponseStatusCode(strconv.Itoa(f.code)))
	span.SetStatus(codes.Error, f.message)
	span.End()
}

// toolError is error.type for a tool result with isError.
const toolError = "tool_error"

// responseError returns the error.type of an answer that reports a
// failure (its JSON-RPC error code, or toolError), and its message; ""
// for a success.
func responseError(resp mcp.JSONRPCMessage) (string, string) {
	switch m := resp.(type) {
	case mcp.JSONRPCError:
		return strconv.Itoa(m.Error.Code), m.Error.Message
	case *mcp.JSONRPCError:
		return strconv.Itoa(m.Error.Code), m.Error.Message
	case rpcError:
		return strconv.Itoa(m.Error.Code), m.Error.Message
	case mcp.JSONRPCResponse:
		switch r := m.Result.(type) {
		case *mcp.CallToolResult:
			if r != nil && r.IsError {
				return toolError, "the tool reported an error"
			}
		case mcp.CallToolResult:
			if r.IsError {
				return toolError, "the tool reported an error"
			}
		}
	}
	return "", ""
}

// rpcIDString is a JSON-RPC id as the jsonrpc.request.id attribute holds
// it: a string's value, a number's text.
func rpcIDString(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// isWriteDeadline reports whether err is a write that ran out of its
// deadline.
func isWriteDeadline(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// traceWriteDeadline adds the write-deadline event to the span in ctx (a
// POST response's: its request's span), if it records.
func traceWriteDeadline(ctx context.Context, err error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(eventWriteDeadline, trace.WithAttributes(attribute.String("exception.message", err.Error())))
	}
}

// traceGetEnd records why a GET stream ended, when a reader of traces
// needs it (its peer dead, taken over by a new stream, a write past its
// deadline), as a short lifeline.stream span with the event. The span's
// parent is whatever span the stream's request context holds (an HTTP
// middleware's).
func (h *Handler) traceGetEnd(g *getStream) {
	if !h.tracing.on() {
		return
	}
	g.mu.Lock()
	cause := g.cause
	g.mu.Unlock()
	var events []string
	switch {
	case errors.Is(cause, errTakenOver):
		events = []string{eventPeerDead, eventTakenOver}
	case errors.Is(cause, errDeadPeer):
		events = []string{eventPeerDead}
	case errors.Is(cause, errWriteFailed) && isWriteDeadline(cause):
		events = []string{eventWriteDeadline}
	default:
		return
	}
	_, span := h.tracing.tracer.Start(g.ctx, streamSpanName, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(g.sess.spanID(), attrStreamKind.String("get")))
	for _, e := range events {
		span.AddEvent(e, trace.WithAttributes(attrUnansweredPings.Int(g.tracker.Unanswered())))
	}
	span.SetStatus(codes.Error, cause.Error())
	span.End()
}
