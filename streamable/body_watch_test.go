package streamable_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// opaqueWriter is a middleware's ResponseWriter wrapper that does not
// unwrap: http.ResponseController cannot set its read deadline.
type opaqueWriter struct{ http.ResponseWriter }

// trickleInitialize sends an initialize in pieces, every apart, on a
// connection of its own, and returns the answer's status line and body.
func trickleInitialize(t *testing.T, endpoint string, pieces int, every time.Duration) (status, body string) {
	t.Helper()
	conn, host := bbDial(t, endpoint)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, testutil.ProtocolVersion)
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", host, len(msg)); err != nil {
		t.Fatal(err)
	}
	size := (len(msg) + pieces - 1) / pieces
	tick := time.NewTicker(every)
	defer tick.Stop()
	for rest := msg; rest != ""; {
		n := min(size, len(rest))
		if _, err := io.WriteString(conn, rest[:n]); err != nil {
			break // answered (and closed) before the body ended
		}
		rest = rest[n:]
		if rest != "" {
			<-tick.C
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled initialize: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.Status, string(b)
}

// Behind a writer whose read deadline cannot be set, a body that takes
// longer than BodyReadTimeout reads without the bound, and is served once
// it has arrived: nothing could interrupt its read, so refusing it then
// would only throw it away.
func TestBodyThroughAWriterWithoutDeadlinesIsServed(t *testing.T) {
	h := streamable.New(demotools.NewServer("opaque", "1"), streamable.Config{BodyReadTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = h.Close() })
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(opaqueWriter{w}, r)
	}))
	t.Cleanup(ts.Close)

	status, body := trickleInitialize(t, ts.URL+"/mcp", 8, 40*time.Millisecond) // about 300 ms
	if !strings.HasPrefix(status, "200") || !strings.Contains(body, `"protocolVersion"`) {
		t.Fatalf("a slow body behind a writer without deadlines: %s %s", status, body)
	}
}

// A body the HTTP server's own ReadTimeout ends (shorter than
// BodyReadTimeout) gets 408 saying so, not naming BodyReadTimeout.
func TestServerReadTimeoutEndsABodyWith408(t *testing.T) {
	h := streamable.New(demotools.NewServer("rt", "1"), streamable.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = h.Close() })
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ReadTimeout = 200 * time.Millisecond
	ts.Start()
	t.Cleanup(ts.Close)

	status, body := trickleInitialize(t, ts.URL+"/mcp", 8, 100*time.Millisecond) // about 700 ms
	if !strings.HasPrefix(status, "408") {
		t.Fatalf("a body past the server's ReadTimeout: %s %s", status, body)
	}
	if !strings.Contains(body, "the HTTP server's read timeout") {
		t.Errorf("the 408 does not name the server's read timeout: %s", body)
	}
}
