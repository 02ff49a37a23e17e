package lifelineclient_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// wantReplacedOnce checks, after one lost session: two initializes and two
// notifications/initialized on the server, one OnSessionReplaced from old
// to the transport's new id, and the three list_changed notifications.
func wantReplacedOnce(t *testing.T, cnt *counter, c *conn, old string) {
	t.Helper()
	if got := cnt.get("initialize"); got != 2 {
		t.Errorf("initialize POSTs on the server: %d, want 2 (the first and one more)", got)
	}
	if got := cnt.get("notifications/initialized"); got != 2 {
		t.Errorf("notifications/initialized on the server: %d, want 2", got)
	}
	now := c.tr.GetSessionId()
	if now == "" || now == old {
		t.Errorf("session id after replacing: %q (old %q)", now, old)
	}
	if got := c.swaps.all(); len(got) != 1 || got[0] != [2]string{old, now} {
		t.Errorf("OnSessionReplaced calls: %q, want one (old, new)", got)
	}
	listChanged := []string{mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationPromptsListChanged}
	// The three are delivered one after another: wait for all before
	// counting, so a late second or third is not read as missing.
	c.notes.waitFor(t, "the three synthesized list_changed", func() bool {
		for _, m := range listChanged {
			if c.notes.count(m) == 0 {
				return false
			}
		}
		return true
	})
	for _, m := range listChanged {
		if got := c.notes.count(m); got != 1 {
			t.Errorf("%s delivered %d times, want 1", m, got)
		}
	}
}

func TestDeletedSessionIsReplaced(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	c := connect(t, l.ts.URL, lifelineclient.Config{}, nil)
	c.echo("before")
	old := c.tr.GetSessionId()
	deleteSession(t, l.ts.URL, old)
	before := l.cnt.carried(old)
	c.echo("after")
	c.echo("later")
	wantReplacedOnce(t, l.cnt, c, old)
	if got := l.cnt.carried(old) - before; got != 1 {
		t.Errorf("requests carrying the dead id after the DELETE: %d, want 1 (the call that got 404)", got)
	}
	if got := l.h.Stats().Sessions; got != 1 {
		t.Errorf("sessions on the server: %d, want 1", got)
	}
}

func TestExpiredSessionIsReplaced(t *testing.T) {
	l := newLifeline(t, streamable.Config{IdleTTL: 100 * time.Millisecond})
	c := connect(t, l.ts.URL, lifelineclient.Config{}, nil)
	c.echo("before")
	old := c.tr.GetSessionId()
	testutil.Eventually(t, wait, "the idle session to expire", func() bool { return l.h.Stats().Sessions == 0 })
	c.echo("after")
	wantReplacedOnce(t, l.cnt, c, old)
}

// 64 calls failing from one lost session share one initialize.
func TestConcurrentCallsShareOneInitialize(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	c := connect(t, l.ts.URL, lifelineclient.Config{}, nil)
	c.echo("before")
	old := c.tr.GetSessionId()
	deleteSession(t, l.ts.URL, old)
	concurrentEchoes(t, c, 64)
	wantReplacedOnce(t, l.cnt, c, old)
}

// concurrentEchoes runs n echo calls at once and fails on any error.
func concurrentEchoes(t *testing.T, c *conn, n int) {
	t.Helper()
	ctx := testutil.Context(t, wait)
	start := testutil.NewBarrier(n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := start.Wait(ctx); err != nil {
				errs <- err
				return
			}
			text := fmt.Sprint("call-", i)
			got, err := c.call(ctx, "echo", map[string]any{"text": text})
			if err == nil && got != text {
				err = fmt.Errorf("echo %q answered %q", text, got)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// A server that answers 404 again on the new session: the call fails after
// one initialize, nothing loops; a server whose initialize fails: the call
// fails with that.
func TestSecond404AndFailedInitializeAreReturned(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var mu sync.Mutex
	notFound := map[string]bool{}
	front := count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		refuse := notFound[peekMethod(r)]
		mu.Unlock()
		if refuse {
			http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"test: refused"}}`, http.StatusNotFound)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	ts := newFront(t, front)
	c := connect(t, ts.URL, lifelineclient.Config{}, nil)
	c.echo("before")

	mu.Lock()
	notFound["tools/call"] = true
	mu.Unlock()
	_, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("call answered 404 on both sessions: %v, want ErrSessionTerminated", err)
	}
	if got := front.get("initialize"); got != 2 {
		t.Fatalf("initialize POSTs: %d, want 2", got)
	}
	if got := front.get("tools/call"); got != 3 {
		t.Fatalf("tools/call POSTs: %d, want 3 (before, the 404, the one retry)", got)
	}

	mu.Lock()
	notFound["initialize"] = true
	mu.Unlock()
	_, err = c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err == nil || !errors.Is(err, transport.ErrLegacySSEServer) {
		t.Fatalf("call whose re-initialize got 404: %v, want the initialize's error", err)
	}
	if got := front.get("initialize"); got != 3 {
		t.Fatalf("initialize POSTs: %d, want 3", got)
	}
	// The session the last 404 ended is not used again: the call waits for
	// a new one and is not sent, as its initialize failed.
	if got := front.get("tools/call"); got != 3 {
		t.Fatalf("tools/call POSTs: %d, want still 3 (none on the dead session, no retry after a failed initialize)", got)
	}
}

// A 404 with no session held (a stateless server) is an ordinary error.
func TestStateless404IsAnOrdinaryError(t *testing.T) {
	l := newLifeline(t, streamable.Config{Stateless: true})
	var refuse sync.Once
	refused := make(chan struct{})
	front := count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peekMethod(r) == "tools/call" {
			select {
			case <-refused:
			default:
				refuse.Do(func() { close(refused) })
				http.Error(w, "test: not found", http.StatusNotFound)
				return
			}
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	ts := newFront(t, front)
	c := connect(t, ts.URL, lifelineclient.Config{}, nil)
	if id := c.tr.GetSessionId(); id != "" {
		t.Fatalf("stateless server gave a session id %q", id)
	}
	_, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("404 from a stateless server: %v, want the 404 as it is", err)
	}
	if got := front.get("initialize"); got != 1 {
		t.Fatalf("initialize POSTs: %d, want 1 (no re-initialize without a session)", got)
	}
	c.echo("after")
}

// The HTTP client must come through Config: mcp-go's option would bypass
// the resuming round tripper.
func TestHTTPBasicClientOptionIsRefused(t *testing.T) {
	_, err := lifelineclient.NewStreamableHTTP("http://127.0.0.1:1/mcp", transport.WithHTTPBasicClient(&http.Client{}))
	if err == nil || !strings.Contains(err.Error(), "Config.HTTPClient") {
		t.Fatalf("error %v, want one naming Config.HTTPClient", err)
	}
	if _, err := lifelineclient.NewStreamableHTTP("http://127.0.0.1:1/mcp", transport.WithHTTPTimeout(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := lifelineclient.NewClient("http://127.0.0.1:1/mcp", transport.WithHTTPBasicClient(&http.Client{})); err == nil {
		t.Fatal("NewClient took transport.WithHTTPBasicClient")
	}
	if c, err := lifelineclient.NewClient("http://127.0.0.1:1/mcp"); err != nil || c == nil {
		t.Fatalf("NewClient: %v", err)
	}
}
