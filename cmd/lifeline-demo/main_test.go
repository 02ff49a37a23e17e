package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests; a broken build fails, not hangs.
const wait = 10 * time.Second

// logBuffer collects what the demo and the client log. It stays safe to
// write to after the test ends, and is shown only when the test failed.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogBuffer(t *testing.T) *logBuffer {
	l := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", l.String())
		}
	})
	return l
}

// startDemo runs the demo with args in a goroutine and returns its address
// and a stop function that cancels its context and returns what run
// returned. The test fails if run is still running at the end.
func startDemo(t *testing.T, logs io.Writer, args ...string) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, logs, func(a string) { addrc <- a }) }()

	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(wait):
				runErr = fmt.Errorf("run did not return within %v of its context ending", wait)
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })

	select {
	case addr = <-addrc:
		return addr, stop
	case err := <-errc:
		cancel()
		t.Fatalf("run returned before it was ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("run was not ready within %v", wait)
	}
	return "", nil
}

// wire is an http.RoundTripper that watches what the mcp-go client sends
// and receives: every byte read from GET streams, the answers to the
// client's replies (pongs) and to its DELETEs.
type wire struct {
	base http.RoundTripper

	mu       sync.Mutex
	getBytes bytes.Buffer
	gets     int
	deletes  []int

	pongs     atomic.Int64
	pongOnce  sync.Once
	firstPong chan struct{} // closed when a reply to a ping got 202
}

func newWire(base http.RoundTripper) *wire {
	return &wire{base: base, firstPong: make(chan struct{})}
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	isReply := false
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(body)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			isReply = json.Unmarshal(b, &m) == nil && m.Method == "" && len(m.ID) > 0 && len(m.Result) > 0
		}
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch {
	case req.Method == http.MethodGet:
		w.mu.Lock()
		w.gets++
		w.mu.Unlock()
		resp.Body = &teeBody{ReadCloser: resp.Body, w: w}
	case req.Method == http.MethodDelete:
		w.mu.Lock()
		w.deletes = append(w.deletes, resp.StatusCode)
		w.mu.Unlock()
	case isReply && resp.StatusCode == http.StatusAccepted:
		w.pongs.Add(1)
		w.pongOnce.Do(func() { close(w.firstPong) })
	}
	return resp, nil
}

// getStreamText returns everything read from GET streams so far.
func (w *wire) getStreamText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.getBytes.String()
}

func (w *wire) deleteStatuses() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deletes)
}

type teeBody struct {
	io.ReadCloser
	w *wire
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.mu.Lock()
		b.w.getBytes.Write(p[:n])
		b.w.mu.Unlock()
	}
	return n, err
}

// notes queues the notifications the mcp-go client's handler receives.
type notes struct {
	ch      chan mcp.JSONRPCNotification
	dropped atomic.Int64
}

func (n *notes) handle(m mcp.JSONRPCNotification) {
	select {
	case n.ch <- m:
	default:
		n.dropped.Add(1)
	}
}

// collect waits, bounded by ctx, until want notifications for which match
// is true have arrived, and returns them in order. Others are skipped.
func (n *notes) collect(ctx context.Context, want int, match func(mcp.JSONRPCNotification) bool) ([]mcp.JSONRPCNotification, error) {
	var got []mcp.JSONRPCNotification
	for len(got) < want {
		select {
		case m := <-n.ch:
			if match(m) {
				got = append(got, m)
			}
		case <-ctx.Done():
			return got, fmt.Errorf("got %d of %d notifications: %w", len(got), want, ctx.Err())
		}
	}
	return got, nil
}

// logParams is the params of a notifications/message.
type logParams struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger"`
	Data   json.RawMessage `json:"data"`
}

type progressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total"`
	Message       string  `json:"message"`
}

func decodeParams(t *testing.T, n mcp.JSONRPCNotification, v any) {
	t.Helper()
	b, err := json.Marshal(n.Params)
	if err != nil {
		t.Fatalf("encode %s params: %v", n.Method, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s params %s: %v", n.Method, b, err)
	}
}

func isLogFrom(logger string) func(mcp.JSONRPCNotification) bool {
	return func(n mcp.JSONRPCNotification) bool {
		if n.Method != "notifications/message" {
			return false
		}
		b, err := json.Marshal(n.Params)
		if err != nil {
			return false
		}
		var p logParams
		return json.Unmarshal(b, &p) == nil && p.Logger == logger
	}
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool returned an error result: %+v", res.Content)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tool result has %d contents, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("tool result content is %T, want text", res.Content[0])
	}
	return tc.Text
}

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
