package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// probe GETs url and returns the status and the "status" field of the
// JSON body.
func probe(ctx context.Context, t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, want application/json", url, ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("GET %s: Cache-Control %q, want no-store", url, cc)
	}
	var v struct{ Status string }
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: body %q is not JSON: %v", url, body, err)
	}
	return resp.StatusCode, v.Status
}

// expectProbe fails the test unless url answers status and body status.
func expectProbe(ctx context.Context, t *testing.T, c *http.Client, url string, status int, state string) {
	t.Helper()
	if code, got := probe(ctx, t, c, url); code != status || got != state {
		t.Errorf("GET %s = %d %q, want %d %q", url, code, got, status, state)
	}
}

// blockingServer is an MCP server with one tool, "block", that reports
// each call on entered and returns "released" once release is closed.
func blockingServer(entered chan<- struct{}, release <-chan struct{}) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("lifeline-health-test", "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return mcp.NewToolResultText("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return s
}

// TestReadinessTurns503WhenShutdownBegins: readiness is 503 before the
// Server listens, 200 while it serves, and 503 from the moment Shutdown
// begins, while a running request has yet to finish; that request's answer
// still arrives. Liveness stays 200 until Shutdown has returned. The checks
// are probed both on the MCP listener (WithHealthPaths) and on a separate
// admin listener (the handlers mounted by the caller).
func TestReadinessTurns503WhenShutdownBegins(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := server.New(blockingServer(entered, release),
		server.WithStreamableHTTPLogger(quiet),
		server.WithHealthPaths("/readyz", "livez/"),
	)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	admin := http.NewServeMux()
	admin.Handle("/ready", srv.ReadinessHandler())
	admin.Handle("/live", srv.LivenessHandler())
	adminTS := httptest.NewServer(admin)
	defer adminTS.Close()
	hc := httpClient(t)
	ctx := testutil.Context(t, 2*wait) // outlasts every Eventually

	// Before Serve: alive, not ready.
	expectProbe(ctx, t, hc, adminTS.URL+"/ready", http.StatusServiceUnavailable, "not listening")
	expectProbe(ctx, t, hc, adminTS.URL+"/live", http.StatusOK, "alive")

	base, served := serve(t, srv)
	// Serve counts as listening once it has its listener; poll, bounded,
	// since Serve runs in its own goroutine.
	testutil.Eventually(t, wait, "readiness 200 once Serve listens", func() bool {
		code, _ := probe(ctx, t, hc, adminTS.URL+"/ready")
		return code == http.StatusOK
	})
	expectProbe(ctx, t, hc, base+"/readyz", http.StatusOK, "ready")
	expectProbe(ctx, t, hc, base+"/livez", http.StatusOK, "alive")

	c := rawClient(t, base+server.DefaultEndpointPath)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	type callResult struct {
		resp *testutil.Response
		err  error
	}
	called := make(chan callResult, 1)
	go func() {
		resp, err := c.CallTool(ctx, "block", nil)
		called <- callResult{resp, err}
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the block tool was not called")
	}

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	// Readiness turns 503 as soon as Shutdown begins; poll, bounded. The
	// tool is still blocked, so the call is still running throughout.
	testutil.Eventually(t, wait, "readiness on the MCP listener 503 draining once Shutdown begins", func() bool {
		code, state := probe(ctx, t, hc, base+"/readyz")
		return code == http.StatusServiceUnavailable && state == "draining"
	})
	expectProbe(ctx, t, hc, adminTS.URL+"/ready", http.StatusServiceUnavailable, "draining")
	expectProbe(ctx, t, hc, base+"/livez", http.StatusOK, "alive")
	expectProbe(ctx, t, hc, adminTS.URL+"/live", http.StatusOK, "alive")
	select {
	case r := <-called:
		t.Fatalf("the call returned before it was released: %+v, %v", r.resp, r.err)
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a call was still running", err)
	default:
	}

	close(release)
	var r callResult
	select {
	case r = <-called:
	case <-ctx.Done():
		t.Fatal("the running call got no answer")
	}
	if r.err != nil {
		t.Fatalf("the running call: %v", r.err)
	}
	if last, err := r.resp.Last(); err != nil || r.resp.Status != http.StatusOK || !strings.Contains(string(last.Result), `"released"`) {
		t.Errorf("the running call's answer: status %d, message %+v, err %v", r.resp.Status, last, err)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Shutdown did not return")
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	expectProbe(ctx, t, hc, adminTS.URL+"/ready", http.StatusServiceUnavailable, "draining")
	expectProbe(ctx, t, hc, adminTS.URL+"/live", http.StatusServiceUnavailable, "stopped")
}

// TestDrainFlipsReadinessOnly: Drain turns readiness 503 at once and then
// waits, while the MCP endpoint keeps serving; cancelling its context ends
// the wait with the context's error.
func TestDrainFlipsReadinessOnly(t *testing.T) {
	srv := newServer(t, server.WithHealthPaths("/readyz", "/livez"))
	base, served := serve(t, srv)
	hc := httpClient(t)
	ctx := testutil.Context(t, 2*wait) // outlasts every Eventually
	testutil.Eventually(t, wait, "readiness 200 once Serve listens", func() bool {
		code, _ := probe(ctx, t, hc, base+"/readyz")
		return code == http.StatusOK
	})

	drainCtx, cancelDrain := context.WithCancel(ctx)
	drained := make(chan error, 1)
	go func() { drained <- srv.Drain(drainCtx, time.Hour) }()
	testutil.Eventually(t, wait, "readiness 503 draining once Drain is called", func() bool {
		code, state := probe(ctx, t, hc, base+"/readyz")
		return code == http.StatusServiceUnavailable && state == "draining"
	})
	expectProbe(ctx, t, hc, base+"/livez", http.StatusOK, "alive")
	// Draining serves as before: a new session, a call.
	c := rawClient(t, base+server.DefaultEndpointPath)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize while draining: %v", err)
	}
	if resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "still here"}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("a call while draining: %+v, %v", resp, err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v before its delay or its context ended", err)
	default:
	}
	cancelDrain()
	select {
	case err := <-drained:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Drain with its context cancelled = %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("Drain did not return when its context was cancelled")
	}
	if err := srv.Drain(ctx, 0); err != nil {
		t.Errorf("Drain with no delay = %v", err)
	}
	expectProbe(ctx, t, hc, base+"/readyz", http.StatusServiceUnavailable, "draining")

	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

// TestHealthChecksAnswerOtherMethods405: a POST to a check gets 405 with
// Allow and a JSON body naming the method; HEAD gets the status alone.
func TestHealthChecksAnswerOtherMethods405(t *testing.T) {
	srv := newServer(t, server.WithHealthPaths("/readyz", "/livez"))
	base, _ := serve(t, srv)
	hc := httpClient(t)
	ctx := testutil.Context(t, 2*wait) // outlasts every Eventually
	for _, path := range []string{"/readyz", "/livez"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader("{}"))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" ||
			!strings.Contains(string(body), `"method POST not allowed: use GET or HEAD"`) {
			t.Errorf("POST %s = %d, Allow %q, body %q; want 405, GET, HEAD, an error naming POST",
				path, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodHead, base+path, nil)
		resp, err = hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("HEAD %s = %d", path, resp.StatusCode)
		}
	}
}

// TestReadinessFollowsStart: with Start, readiness is 503 while the address
// cannot be bound (Start returned its listen error) and 200 once Start
// listens; after Start returns it is 503 again.
func TestReadinessFollowsStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	srv := newServer(t, server.WithHealthPaths("/readyz", "/livez"))
	adminTS := httptest.NewServer(srv.ReadinessHandler())
	defer adminTS.Close()
	hc := httpClient(t)
	ctx := testutil.Context(t, 2*wait) // outlasts every Eventually

	unbound := newServer(t)
	unboundTS := httptest.NewServer(unbound.ReadinessHandler())
	defer unboundTS.Close()
	if err := unbound.Start(busy.Addr().String()); err == nil {
		t.Fatal("Start on a busy address succeeded")
	}
	expectProbe(ctx, t, hc, unboundTS.URL, http.StatusServiceUnavailable, "not listening")

	addr := freeAddr(t)
	started := make(chan error, 1)
	go func() { started <- srv.Start(addr) }()
	testutil.Eventually(t, wait, "readiness 200 once Start listens", func() bool {
		code, _ := probe(ctx, t, hc, adminTS.URL)
		return code == http.StatusOK
	})
	expectProbe(ctx, t, hc, "http://"+addr+"/readyz", http.StatusOK, "ready")
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("Start returned %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Start did not return after Shutdown")
	}
	expectProbe(ctx, t, hc, adminTS.URL, http.StatusServiceUnavailable, "draining")
}

// TestWithHealthPathsRefusesClashes: a health path that is the endpoint's,
// the other check's, or no plain path makes Serve return a clear error
// (and close its listener) instead of panicking in ServeMux.
func TestWithHealthPathsRefusesClashes(t *testing.T) {
	for _, tc := range []struct {
		ready, live, want string
	}{
		{"/mcp", "/livez", "is the MCP endpoint's path"},
		{"/readyz", "mcp", "is the MCP endpoint's path"},
		{"/health", "/health/", "share the path"},
		{"/ready z", "", "is not a plain URL path"},
		{"/{ready}", "", "is not a plain URL path"},
	} {
		srv := newServer(t, server.WithHealthPaths(tc.ready, tc.live))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		err = srv.Serve(l)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithHealthPaths(%q, %q): Serve = %v, want an error saying it %s", tc.ready, tc.live, err, tc.want)
		}
		if conn, derr := net.Dial("tcp", l.Addr().String()); derr == nil {
			conn.Close()
			t.Errorf("WithHealthPaths(%q, %q): Serve returned but left its listener open", tc.ready, tc.live)
		}
	}
}
