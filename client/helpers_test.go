package lifelineclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// wait bounds every wait in these tests.
const wait = 10 * time.Second

// testLogger is quiet unless LIFELINE_TEST_LOG is set.
func testLogger() *slog.Logger {
	var out io.Writer = io.Discard
	if os.Getenv("LIFELINE_TEST_LOG") != "" {
		out = os.Stderr
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// counter is http middleware that counts, server side, the JSON-RPC
// methods POSTed to next (initialize among them) and the session ids
// initialize answered with.
type counter struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
	ids  map[string]int // requests (any method) by the session id they carried
}

func count(next http.Handler) *counter {
	return &counter{next: next, n: map[string]int{}, ids: map[string]int{}}
}

// carried returns how many requests carried session id.
func (c *counter) carried(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		c.mu.Lock()
		c.ids[id]++
		c.mu.Unlock()
	}
	if r.Method == http.MethodPost {
		if m := peekMethod(r); m != "" {
			c.mu.Lock()
			c.n[m]++
			c.mu.Unlock()
		}
	}
	c.next.ServeHTTP(w, r)
}

// get returns how many times method was POSTed.
func (c *counter) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// lifeline is a lifeline transport on a loopback httptest server, behind
// a counter.
type lifeline struct {
	t   *testing.T
	h   *streamable.Handler
	mcp *server.MCPServer
	ts  *httptest.Server
	cnt *counter
}

func newLifeline(t *testing.T, cfg streamable.Config, setup ...func(*server.MCPServer)) *lifeline {
	t.Helper()
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = streamable.Disabled
	}
	cfg.Logger = testLogger()
	s := demotools.NewServer("lifelineclient-test", "1")
	for _, f := range setup {
		f(s)
	}
	h := streamable.New(s, cfg)
	cnt := count(h)
	ts := httptest.NewServer(cnt)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return &lifeline{t: t, h: h, mcp: s, ts: ts, cnt: cnt}
}

// deleteSession makes the server forget id with a DELETE of its own.
func deleteSession(t *testing.T, url, id string) {
	t.Helper()
	raw := testutil.NewClient(url)
	raw.SessionID = id
	resp, err := raw.Delete(testutil.Context(t, wait))
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
}

// replaced records OnSessionReplaced calls.
type replaced struct {
	mu    sync.Mutex
	pairs [][2]string
}

func (r *replaced) record(old, new string) {
	r.mu.Lock()
	r.pairs = append(r.pairs, [2]string{old, new})
	r.mu.Unlock()
}

func (r *replaced) all() [][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][2]string(nil), r.pairs...)
}

// notes records the notifications a client gets, by method.
type notes struct {
	mu  sync.Mutex
	got []mcp.JSONRPCNotification
	ch  chan struct{} // signalled on each
}

func newNotes() *notes { return &notes{ch: make(chan struct{}, 1)} }

func (n *notes) add(m mcp.JSONRPCNotification) {
	n.mu.Lock()
	n.got = append(n.got, m)
	n.mu.Unlock()
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

func (n *notes) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.got {
		if m.Method == method {
			c++
		}
	}
	return c
}

func (n *notes) all() []mcp.JSONRPCNotification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]mcp.JSONRPCNotification(nil), n.got...)
}

// waitFor polls cond until it holds, failing the test after wait.
func (n *notes) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-n.ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// conn is a lifelineclient Transport and the mcp-go client on it,
// initialized on 2025-11-25.
type conn struct {
	t     *testing.T
	tr    *lifelineclient.Transport
	c     *client.Client
	notes *notes
	swaps *replaced
}

// connect starts a client on url with cfg (its OnSessionReplaced and
// HTTPClient are set here) and mcp-go options, and initializes it.
func connect(t *testing.T, url string, cfg lifelineclient.Config, topts []transport.StreamableHTTPCOption, copts ...client.ClientOption) *conn {
	t.Helper()
	swaps := &replaced{}
	cfg.OnSessionReplaced = swaps.record
	if cfg.HTTPClient == nil {
		ht := &http.Transport{}
		t.Cleanup(ht.CloseIdleConnections)
		cfg.HTTPClient = &http.Client{Transport: ht}
	}
	cfg.Logger = testLogger()
	tr, err := cfg.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	copts = append(copts, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	c := client.NewClient(tr, copts...)
	ctx := testutil.Context(t, wait)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := newNotes()
	c.OnNotification(n.add)
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "lifelineclient-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return &conn{t: t, tr: tr, c: c, notes: n, swaps: swaps}
}

// call calls tool name and returns its first text.
func (c *conn) call(ctx context.Context, name string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", nil
	}
	text, _ := res.Content[0].(mcp.TextContent)
	return text.Text, nil
}

// echo calls the echo tool and fails the test unless it answers text.
func (c *conn) echo(text string) {
	c.t.Helper()
	got, err := c.call(testutil.Context(c.t, wait), "echo", map[string]any{"text": text})
	if err != nil || got != text {
		c.t.Fatalf("echo %q: %q, %v", text, got, err)
	}
}

// peekMethod returns the JSON-RPC method of a POST, leaving its body to
// be read again.
func peekMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// newFront serves h on a loopback httptest server, closed when the test ends.
func newFront(t *testing.T, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}
