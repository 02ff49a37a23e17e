package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Readiness is 503 {"status":"store unreachable"} while the session store
// does not answer (Redis paused), and 200 again once it does; liveness
// stays 200 throughout.
func TestReadinessIs503WhileTheStoreIsUnreachable(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, redisstore.Options{Prefix: "readiness:", OpTimeout: 100 * time.Millisecond})
	t.Cleanup(func() {
		_ = rs.Resume()
		_ = store.Close()
		_ = rc.Close()
	})
	srv := newServer(t, server.WithSessionStore(store), server.WithHealthPaths("/readyz", "/livez"))
	base, _ := serve(t, srv)
	c := httpClient(t)
	ctx := testutil.Context(t, wait)
	testutil.Eventually(t, wait, "ready", func() bool {
		code, _ := probe(ctx, t, c, base+"/readyz")
		return code == http.StatusOK
	})
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	expectProbe(ctx, t, c, base+"/readyz", http.StatusServiceUnavailable, "store unreachable")
	expectProbe(ctx, t, c, base+"/livez", http.StatusOK, "alive")
	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "ready again", func() bool {
		code, _ := probe(ctx, t, c, base+"/readyz")
		return code == http.StatusOK
	})
}

// WithTracerProvider and WithPropagator reach the transport: a request
// with a traceparent header gets a span, child of the header's.
func TestTracingOptionsReachTheTransport(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	srv := newServer(t, server.WithTracerProvider(tp), server.WithPropagator(propagation.TraceContext{}))
	base, _ := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	c.Header = map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("echo: %v %+v", err, resp)
	}
	testutil.Eventually(t, wait, "the call's span", func() bool {
		for _, s := range rec.Ended() {
			if s.Name() == "tools/call echo" && s.Parent().SpanID().String() == "00f067aa0ba902b7" {
				return true
			}
		}
		return false
	})
}
