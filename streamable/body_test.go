package streamable_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// bodyRig serves a transport on a loopback server that counts connections
// with a request in progress.
type bodyRig struct {
	h      *streamable.Handler
	ts     *httptest.Server
	active atomic.Int64
}

func newBodyRig(t *testing.T, cfg streamable.Config) *bodyRig {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &bodyRig{h: streamable.New(demotools.NewServer("lifeline-test", "1"), cfg)}
	r.ts = httptest.NewUnstartedServer(r.h)
	r.ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateActive:
			r.active.Add(1)
		case http.StateIdle, http.StateClosed, http.StateHijacked:
			// A connection leaves StateActive once, for one of these.
		}
	}
	r.ts.Start()
	t.Cleanup(func() {
		_ = r.h.Close()
		r.ts.Close()
	})
	return r
}

// trickleBody opens a connection and sends a POST that declares a 4 MB body
// and sends its first byte only.
func trickleBody(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 4000000\r\n\r\n{", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// statusOf reads the status line the server answers on conn, within wait.
func statusOf(t *testing.T, conn net.Conn) (string, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, string(body)
}

func TestSlowBodyGets408(t *testing.T) {
	r := newBodyRig(t, streamable.Config{BodyReadTimeout: 200 * time.Millisecond})
	conn := trickleBody(t, r.ts.Listener.Addr().String())
	status, body := statusOf(t, conn)
	if !strings.HasPrefix(status, "408") || !strings.Contains(body, "did not arrive within 200ms") {
		t.Fatalf("trickled body: %s %s", status, body)
	}
	// Other clients are served as usual.
	c := testutil.NewClient(r.ts.URL)
	if _, err := c.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
}

func TestSlowBodiesFreeTheirHandlers(t *testing.T) {
	const conns = 200
	r := newBodyRig(t, streamable.Config{BodyReadTimeout: 300 * time.Millisecond})
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	heapBefore := heap()
	before := runtime.NumGoroutine()
	var held []net.Conn
	for range conns {
		held = append(held, trickleBody(t, r.ts.Listener.Addr().String()))
	}
	testutil.Eventually(t, wait, "every trickled request to reach its handler", func() bool {
		return r.active.Load() == conns
	})
	peak, heapPeak := runtime.NumGoroutine(), heap()
	for _, conn := range held {
		if status, _ := statusOf(t, conn); !strings.HasPrefix(status, "408") {
			t.Fatalf("trickled body: %s", status)
		}
	}
	testutil.Eventually(t, wait, "the handlers of trickled bodies to exit", func() bool {
		return runtime.NumGoroutine() <= before+5
	})
	t.Logf("goroutines: %d before, %d with %d trickled bodies, %d after the timeout; heap: +%d KiB with them, +%d KiB after",
		before, peak, conns, runtime.NumGoroutine(), int64(heapPeak-heapBefore)>>10, (int64(heap())-int64(heapBefore))>>10)
}

func TestShutdownInterruptsSlowBodies(t *testing.T) {
	const conns = 50
	// The default body timeout (30 s) is far longer than Shutdown's bound.
	r := newBodyRig(t, streamable.Config{})
	var held []net.Conn
	for range conns {
		held = append(held, trickleBody(t, r.ts.Listener.Addr().String()))
	}
	testutil.Eventually(t, wait, "every trickled request to reach its handler", func() bool {
		return r.active.Load() == conns
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, conn := range held {
		status, body := statusOf(t, conn)
		if !strings.HasPrefix(status, "503") || !strings.Contains(body, "shutting down") {
			t.Fatalf("trickled body during Shutdown: %s %s", status, body)
		}
	}
	if err := r.ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("http.Server.Shutdown with trickled bodies: %v", err)
	}
}

func TestBodyReadTimeoutEndsWithTheBody(t *testing.T) {
	const timeout = 100 * time.Millisecond
	r := newRig(t, streamable.Config{BodyReadTimeout: timeout}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("outlast_body_timeout"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Runs well past the body's deadline: the connection must
			// not fail at it.
			select {
			case <-time.After(4 * timeout):
				return mcp.NewToolResultText("outlasted"), nil
			case <-ctx.Done():
				return nil, fmt.Errorf("cancelled: %w", context.Cause(ctx))
			}
		})
	})
	c := r.session()
	st := r.stream(c)
	resp, err := c.CallTool(testutil.Context(t, wait), "outlast_body_timeout", nil)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), "outlasted") {
		t.Fatalf("a call that outlasts the body timeout: %d %s", resp.Status, resp.Body)
	}
	// The GET stream, opened before, is still live: its pings arrive.
	if _, err := st.Next(testutil.Context(t, wait)); err != nil {
		t.Fatalf("GET stream after the body timeout: %v", err)
	}
}
