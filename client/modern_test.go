package lifelineclient_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// connectModern starts a client on url on mcp-go's default version,
// 2026-07-28 (sessionless), through hc.
func connectModern(t *testing.T, url string, hc *http.Client) *conn {
	t.Helper()
	tr, err := lifelineclient.Config{HTTPClient: hc, Logger: testLogger()}.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx := testutil.Context(t, wait)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := newNotes()
	c.OnNotification(n.add)
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "lifelineclient-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); !mcp.IsModernProtocol(v) {
		t.Fatalf("negotiated %q, want 2026-07-28 or later", v)
	}
	return &conn{t: t, tr: tr, c: c, notes: n, swaps: &replaced{}}
}

// On 2026-07-28 a 404 is an ordinary error: no initialize, no retry.
func TestModern404IsAnOrdinaryError(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var refused atomic.Bool
	front := count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peekMethod(r) == "tools/call" && refused.CompareAndSwap(false, true) {
			http.Error(w, "test: not found", http.StatusNotFound)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	ts := newFront(t, front)
	c := connectModern(t, ts.URL, nil)
	_, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("404 on 2026-07-28: %v, want it as it is", err)
	}
	if got := front.get("initialize") + front.get("tools/call"); got != 1 {
		t.Fatalf("initialize and tools/call POSTs: %d, want 1 (the refused call only)", got)
	}
	c.echo("after")
}

// A 2026-07-28 call whose connection could not be made is sent again once
// and runs once.
func TestModernCallThatNeverReachedTheServerIsSentAgain(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var failDials atomic.Int64
	ht := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if failDials.Add(-1) >= 0 {
			return nil, errors.New("test: dial refused")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(ht.CloseIdleConnections)
	c := connectModern(t, l.ts.URL, &http.Client{Transport: ht})
	ht.CloseIdleConnections()
	failDials.Store(1)
	c.echo("once")
	if got := l.cnt.get("tools/call"); got != 1 {
		t.Fatalf("tools/call on the server: %d, want 1", got)
	}
	failDials.Store(2)
	ht.CloseIdleConnections()
	if _, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err == nil {
		t.Fatal("a call whose connection failed twice succeeded")
	}
	if got := l.cnt.get("tools/call"); got != 1 {
		t.Fatalf("tools/call on the server: %d, want still 1", got)
	}
}

// A 2026-07-28 call whose response broke after it reached the server is
// not sent again: the error is returned.
func TestModernCallCutAfterReachingTheServerFails(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{l.ts.URL}})
	c := connectModern(t, p.URL(), nil)
	c.echo("before")
	p.Arm(testutil.Fault{Match: func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodPost }, After: 1})
	if _, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err == nil {
		t.Fatal("a call whose response was cut succeeded")
	}
	if got := l.cnt.get("tools/call"); got != 2 {
		t.Fatalf("tools/call on the server: %d, want 2 (before, and the cut one once)", got)
	}
}
