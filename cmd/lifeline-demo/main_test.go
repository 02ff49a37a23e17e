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
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
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

// TestDemoWithRedis runs the demo on a Redis store under a custom prefix:
// the handshake, tools/list and a tool call over raw HTTP, with the
// session's record in Redis under that prefix.
func TestDemoWithRedis(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	redisURL := "redis://" + redisAddr + "/0"
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL, "-redis-prefix", "demo-test:")
	ctx := testutil.Context(t, wait)

	c := rawClient(t, "http://"+addr+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools %q, want %q", got, demoTools)
	}
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "hello, redis"}); got != "hello, redis" {
		t.Errorf("echo returned %q", got)
	}

	// The session lives in Redis, under the prefix given.
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer client.Close()
	store := redisstore.New(client, redisstore.Options{Prefix: "demo-test:"})
	defer store.Close()
	if rec, err := store.Get(ctx, c.SessionID); err != nil || rec.ID != c.SessionID {
		t.Errorf("the session's record under prefix demo-test: is %+v, %v", rec, err)
	}
	defaultPrefix := redisstore.New(client, redisstore.Options{Prefix: demoRedisPrefix})
	defer defaultPrefix.Close()
	if _, err := defaultPrefix.Get(ctx, c.SessionID); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("the session's record under the default prefix: %v, want ErrNotFound", err)
	}

	if line := startupLine(logs.String()); !strings.Contains(line, "store=redis") ||
		!strings.Contains(line, "redis="+redisURL) || !strings.Contains(line, "redis_prefix=demo-test:") {
		t.Errorf("startup line does not describe the Redis store: %q", line)
	}
	if strings.Contains(logs.String(), "unreachable") {
		t.Errorf("Redis reported unreachable though it runs:\n%s", logs.String())
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
}

// startupLine returns the demo's "serving MCP" log line.
func startupLine(logs string) string {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "lifeline-demo serving MCP") {
			return line
		}
	}
	return ""
}

// TestDemoReplicasShareSessions runs two demos on one Redis: a session
// initialized on one is served by the other, and by the first again. The
// session's record is under the demo's own default prefix (its server
// name), not a prefix every lifeline application would share.
func TestDemoReplicasShareSessions(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	redisURL := "redis://" + redisAddr + "/0"
	logs := newLogBuffer(t)
	addrA, stopA := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL)
	addrB, stopB := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL)
	ctx := testutil.Context(t, wait)

	c := rawClient(t, "http://"+addrA+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize on replica A: %v", err)
	}
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer client.Close()
	for prefix, want := range map[string]error{"lifeline-demo:": nil, "lifeline:": sessionstore.ErrNotFound} {
		store := redisstore.New(client, redisstore.Options{Prefix: prefix})
		_, err := store.Get(ctx, c.SessionID)
		store.Close()
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("the session's record under prefix %q: %v, want %v", prefix, err, want)
		}
	}
	c.URL = "http://" + addrB + "/mcp"
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "on B"}); got != "on B" {
		t.Errorf("echo on replica B returned %q", got)
	}
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools on replica B %q, want %q", got, demoTools)
	}
	c.URL = "http://" + addrA + "/mcp"
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "back on A"}); got != "back on A" {
		t.Errorf("echo on replica A returned %q", got)
	}
	for name, stop := range map[string]func() error{"A": stopA, "B": stopB} {
		if err := stop(); err != nil {
			t.Errorf("run of replica %s returned %v, want nil", name, err)
		}
	}
}

// TestDemoBadRedisURL: a -redis value that is not a Redis URL fails
// startup with an error naming the flag (and not repeating a password),
// before anything runs.
func TestDemoBadRedisURL(t *testing.T) {
	testutil.NoLeaks(t)
	for _, bad := range []string{
		"http://127.0.0.1:6379",
		"127.0.0.1:6379",
		"redis://127.0.0.1:6379/not-a-db",
		"redis://user:s3cret@127.0.0.1:6379/0/extra",
		"redis://user:s3cret@127.0.0.1:bad-port/0",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ready := false
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-redis", bad}, io.Discard, func(string) { ready = true })
		cancel()
		if err == nil || !strings.Contains(err.Error(), "-redis") {
			t.Errorf("run with -redis %q = %v, want an error naming -redis", bad, err)
			continue
		}
		if ready {
			t.Errorf("run with -redis %q reported ready", bad)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error for -redis %q shows the password: %v", bad, err)
		}
		t.Logf("-redis %q: %v", bad, err)
	}
}

// TestDemoEmptyRedisPrefix: an empty -redis-prefix fails startup with an
// error naming the flag, before anything runs.
func TestDemoEmptyRedisPrefix(t *testing.T) {
	testutil.NoLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ready := false
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-redis", "redis://127.0.0.1:6379/0", "-redis-prefix", ""}, io.Discard,
		func(string) { ready = true })
	if err == nil || !strings.Contains(err.Error(), "-redis-prefix") || ready {
		t.Errorf("run with an empty -redis-prefix = %v (ready %t), want an error naming -redis-prefix", err, ready)
	}
}

// TestDemoRedisDownAtStartup: a Redis that does not answer at startup is a
// warning, not a failure. Requests that need it get 503 meanwhile, and the
// demo serves once Redis is back, with no restart.
func TestDemoRedisDownAtStartup(t *testing.T) {
	r := testutil.StartRedisServer(t)
	r.Stop()
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", "redis://"+r.Addr()+"/0")
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "Redis is unreachable") {
		t.Errorf("no warning that Redis is unreachable:\n%s", logs.String())
	}
	ctx := testutil.Context(t, wait)
	c := rawClient(t, "http://"+addr+"/mcp")
	resp, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "lifeline-demo-test", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := resp.Last(); resp.Status != http.StatusServiceUnavailable || err != nil || m.Error == nil ||
		!strings.Contains(strings.ToLower(m.Error.Message), "redis is unavailable") {
		t.Errorf("initialize with Redis down: status %d, body %q; want 503 with a JSON-RPC error saying Redis is unavailable", resp.Status, resp.Body)
	}

	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	var initErr error
	testutil.Eventually(t, wait, "initialize to succeed once Redis is back", func() bool {
		_, initErr = c.Initialize(ctx)
		return initErr == nil
	})
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "recovered"}); got != "recovered" {
		t.Errorf("echo returned %q", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
}

// TestDemoReplicasBehindRoundRobinProxy runs three demos on one Redis behind
// a proxy that sends each request to the next replica: the handshake, the
// GET stream and the calls of one session each land on a different replica,
// and the session's notifications still reach its stream.
func TestDemoReplicasBehindRoundRobinProxy(t *testing.T) {
	redisURL := "redis://" + testutil.StartRedis(t) + "/0"
	logs := newLogBuffer(t)
	var backends []string
	for range 3 {
		addr, _ := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL, "-heartbeat", "50ms")
		backends = append(backends, "http://"+addr)
	}
	p, err := testutil.NewRoundRobinProxy(backends...)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Close()
		front.Close()
		p.Close()
	})
	ctx := testutil.Context(t, wait)

	c := rawClient(t, front.URL+"/mcp")
	p.Pin(0)
	if _, err := c.Initialize(ctx); err != nil { // initialize on 0, initialized on 1
		t.Fatalf("initialize: %v", err)
	}
	s, err := c.OpenStream(ctx) // on 2
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Status != http.StatusOK {
		t.Fatalf("GET stream through the proxy: status %d, body %q", s.Status, s.Body)
	}
	// From here on the heartbeat's pongs take turns too, so which replica
	// serves what varies; every request still goes to the next one.
	s.AnswerPings(true)
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools %q, want %q", got, demoTools)
	}
	if got := callOK(ctx, t, c, "lifeline_notify_session", map[string]any{"count": 2}); got != "sent 2 notifications" {
		t.Errorf("lifeline_notify_session returned %q", got)
	}
	for i := range 2 {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("notification %d on the GET stream: %v", i, err)
		}
		if !strings.Contains(string(m.Params), `"lifeline_notify_session"`) {
			t.Errorf("notification %d: %s", i, m.Params)
		}
	}
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Errorf("echo returned %q", got)
	}
}
