package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemoWithMCPGoClient drives the demo with mcp-go's own Streamable HTTP
// client, continuous listening on: the handshake, tools, notifications on
// the GET stream, progress on the call's own stream, heartbeat pings
// answered by the client, DELETE on Close, and a clean shutdown.
func TestDemoWithMCPGoClient(t *testing.T) {
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-heartbeat", "50ms")
	endpoint := "http://" + addr + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	httpTransport := &http.Transport{}
	defer httpTransport.CloseIdleConnections()
	w := newWire(httpTransport)
	trans, err := transport.NewStreamableHTTP(endpoint,
		transport.WithContinuousListening(),
		transport.WithHTTPBasicClient(&http.Client{Transport: w}),
		transport.WithHTTPLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	n := &notes{ch: make(chan mcp.JSONRPCNotification, 1024)}
	c.OnNotification(n.handle)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}

	// The handshake. The client opens its GET stream as soon as the
	// initialize response arrives, so the GET may reach the server before
	// notifications/initialized does.
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: "2025-11-25",
		ClientInfo:      mcp.Implementation{Name: "lifeline-demo-test", Version: "1"},
	}})
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if init.ProtocolVersion != "2025-11-25" {
		t.Errorf("negotiated protocol version %q, want 2025-11-25", init.ProtocolVersion)
	}
	if init.ServerInfo.Name != "lifeline-demo" || init.ServerInfo.Version != "0.1.0" {
		t.Errorf("server info %+v, want lifeline-demo 0.1.0", init.ServerInfo)
	}
	sessionID := c.GetSessionId()
	if sessionID == "" {
		t.Fatal("no session id after Initialize")
	}

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"echo", "lifeline_notify_session", "lifeline_progress"}; !slices.Equal(names, want) {
		t.Errorf("tools %q, want %q", names, want)
	}

	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "echo", Arguments: map[string]any{"text": "hello, lifeline"},
	}})
	if err != nil {
		t.Fatalf("CallTool echo: %v", err)
	}
	if got := toolText(t, res); got != "hello, lifeline" {
		t.Errorf("echo returned %q", got)
	}

	// Session notifications travel on the GET stream.
	res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "lifeline_notify_session", Arguments: map[string]any{"count": 3},
	}})
	if err != nil {
		t.Fatalf("CallTool lifeline_notify_session: %v", err)
	}
	if got := toolText(t, res); got != "sent 3 notifications" {
		t.Errorf("lifeline_notify_session returned %q", got)
	}
	got, err := n.collect(ctx, 3, isLogFrom("lifeline_notify_session"))
	if err != nil {
		t.Fatalf("session notifications: %v", err)
	}
	for i, m := range got {
		var p logParams
		decodeParams(t, m, &p)
		var data struct {
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal(p.Data, &data); err != nil {
			t.Fatalf("notification %d data %s: %v", i, p.Data, err)
		}
		if data.Seq != i || p.Level != "info" {
			t.Errorf("notification %d: level %q seq %d, want info seq %d", i, p.Level, data.Seq, i)
		}
	}
	// The handler has seen them, so their bytes were read already: they
	// came on a GET stream.
	if k := strings.Count(w.getStreamText(), `"logger":"lifeline_notify_session"`); k != 3 {
		t.Errorf("%d lifeline_notify_session notifications read from GET streams, want 3; GET bytes:\n%s", k, w.getStreamText())
	}

	// Progress and log notifications travel on the call's own response.
	res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name:      "lifeline_progress",
		Arguments: map[string]any{"steps": 3},
		Meta:      &mcp.Meta{ProgressToken: "demo-progress"},
	}})
	if err != nil {
		t.Fatalf("CallTool lifeline_progress: %v", err)
	}
	if got := toolText(t, res); got != "done 3 steps" {
		t.Errorf("lifeline_progress returned %q", got)
	}
	progress, err := n.collect(ctx, 3, func(m mcp.JSONRPCNotification) bool { return m.Method == "notifications/progress" })
	if err != nil {
		t.Fatalf("progress notifications: %v", err)
	}
	for i, m := range progress {
		var p progressParams
		decodeParams(t, m, &p)
		if p.ProgressToken != "demo-progress" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress %d: %+v, want token demo-progress, progress %d of 3", i, p, i+1)
		}
	}
	if text := w.getStreamText(); strings.Contains(text, "notifications/progress") || strings.Contains(text, "lifeline_progress") {
		t.Errorf("progress or its logs travelled on the GET stream:\n%s", text)
	}

	// The heartbeat pings the GET stream every 50 ms; the client answers.
	select {
	case <-w.firstPong:
	case <-ctx.Done():
		t.Fatalf("the client answered no heartbeat ping within %v (GET bytes:\n%s)", wait, w.getStreamText())
	}
	if !strings.Contains(w.getStreamText(), `"method":"ping"`) {
		t.Errorf("no ping read from the GET stream, yet a reply was accepted")
	}
	if d := n.dropped.Load(); d > 0 {
		t.Errorf("%d notifications dropped by the test's handler", d)
	}

	// Close sends DELETE (mcp-go's StreamableHTTP.Close does, synchronously).
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ds := w.deleteStatuses(); !slices.Equal(ds, []int{http.StatusOK}) {
		t.Errorf("DELETE answers %v, want one 200", ds)
	}
	raw := testutil.NewClient(endpoint)
	raw.HTTP = &http.Client{Transport: httpTransport}
	raw.SessionID = sessionID
	raw.ProtocolVersion = testutil.ProtocolVersion
	after, err := raw.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatalf("POST after DELETE: %v", err)
	}
	if after.Status != http.StatusNotFound {
		t.Errorf("POST with the deleted session's id: status %d, want 404 (body %q)", after.Status, after.Body)
	}

	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
	w.mu.Lock()
	gets := w.gets
	w.mu.Unlock()
	t.Logf("GET requests %d, pongs accepted %d", gets, w.pongs.Load())
}

// TestDemoDebugAndFlags checks that -debug serves pprof next to the MCP
// endpoint and that a bad flag makes run fail without serving.
func TestDemoDebugAndFlags(t *testing.T) {
	t.Run("debug", func(t *testing.T) {
		logs := newLogBuffer(t)
		addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-debug")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}

		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET /debug/pprof/: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
			t.Errorf("GET /debug/pprof/: status %d, body %.200q", resp.StatusCode, body)
		}

		// The MCP endpoint is still there.
		c := testutil.NewClient("http://" + addr + "/mcp")
		c.HTTP = hc
		if _, err := c.Initialize(ctx); err != nil {
			t.Errorf("initialize with -debug: %v", err)
		}
		if !strings.Contains(logs.String(), "level=DEBUG") && !strings.Contains(logs.String(), "debug=true") {
			t.Errorf("-debug not reflected in the logs:\n%s", logs.String())
		}
		if err := stop(); err != nil {
			t.Errorf("run returned %v, want nil", err)
		}
	})
	t.Run("no debug, no pprof", func(t *testing.T) {
		addr, stop := startDemo(t, io.Discard, "-addr", "127.0.0.1:0")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("GET /debug/pprof/: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /debug/pprof/ without -debug: status %d, want 404", resp.StatusCode)
		}
		if err := stop(); err != nil {
			t.Errorf("run returned %v, want nil", err)
		}
	})
	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"-no-such-flag"},
			{"-heartbeat", "often"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			var stderr bytes.Buffer
			ready := false
			err := run(ctx, args, &stderr, func(string) { ready = true })
			cancel()
			if err == nil {
				t.Errorf("run(%q) = nil, want an error", args)
			}
			if ready {
				t.Errorf("run(%q) reported ready", args)
			}
			if args[0] == "-no-such-flag" && !strings.Contains(stderr.String(), "no-such-flag") {
				t.Errorf("run(%q) wrote no usage naming the flag: %q", args, stderr.String())
			}
		}
		if err := run(context.Background(), []string{"-h"}, io.Discard, nil); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("run(-h) = %v, want flag.ErrHelp", err)
		}
	})
}

// TestRunListenErrorLeaksNothing: when the listen address cannot be used,
// run must return the error and leave nothing running. server.New starts
// the transport's heartbeat scheduler and expiry sweeper, so run has to
// listen first (or shut the transport down on that path).
func TestRunListenErrorLeaksNothing(t *testing.T) {
	testutil.NoLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ready := false
	err = run(ctx, []string{"-addr", l.Addr().String()}, io.Discard, func(string) { ready = true })
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("run on a busy address = %v, want a listen error", err)
	}
	if ready {
		t.Error("run on a busy address reported ready")
	}
	// testutil.NoLeaks fails the test if the transport's goroutines
	// (heartbeat.(*Scheduler).run, streamable.(*Handler).sweep) are left.
}

// rawClient returns a raw MCP client for url whose HTTP transport's idle
// connections are closed when the test ends.
func rawClient(t *testing.T, url string) *testutil.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := testutil.NewClient(url)
	c.HTTP = &http.Client{Transport: tr}
	return c
}

// callOK calls a tool and returns the text of its result, failing the test
// unless the answer is a 200 carrying a successful result.
func callOK(ctx context.Context, t *testing.T, c *testutil.Client, tool string, args map[string]any) string {
	t.Helper()
	resp, err := c.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatalf("tools/call %s at %s: %v", tool, c.URL, err)
	}
	m, err := resp.Last()
	if err != nil || resp.Status != http.StatusOK || m.Error != nil {
		t.Fatalf("tools/call %s at %s: status %d, message %+v, err %v, body %q", tool, c.URL, resp.Status, m, err, resp.Body)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/call %s result %s: %v", tool, m.Result, err)
	}
	return toolText(t, &res)
}

// listTools returns the sorted names of the tools the server lists.
func listTools(ctx context.Context, t *testing.T, c *testutil.Client) []string {
	t.Helper()
	resp, err := c.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatalf("tools/list at %s: %v", c.URL, err)
	}
	m, err := resp.Last()
	if err != nil || resp.Status != http.StatusOK || m.Error != nil {
		t.Fatalf("tools/list at %s: status %d, message %+v, err %v, body %q", c.URL, resp.Status, m, err, resp.Body)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/list result %s: %v", m.Result, err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

var demoTools = []string{"echo", "lifeline_notify_session", "lifeline_progress"}
