package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

type bbTrickler struct {
	conn     net.Conn
	stop     chan struct{}
	done     chan struct{}
	progress chan struct{}
	start    time.Time
}

// bbDial opens a raw TCP connection to endpoint's host, and returns it
// with that host.
func bbDial(t *testing.T, endpoint string) (net.Conn, string) {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return conn, u.Host
}

// bbTrickle opens a raw connection and POSTs a tools/call declaring
// declared bytes of body, then sends chunk bytes of it every interval.
func bbTrickle(t *testing.T, endpoint, sessionID string, declared, chunk int, every time.Duration) *bbTrickler {
	t.Helper()
	conn, host := bbDial(t, endpoint)
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n"+
		"Content-Length: %d\r\n\r\n", host, sessionID, testutil.ProtocolVersion, declared)
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`)
	tr := &bbTrickler{conn: conn, stop: make(chan struct{}), done: make(chan struct{}),
		progress: make(chan struct{}, 1<<16), start: time.Now()}
	go func() {
		defer close(tr.done)
		_ = conn.SetWriteDeadline(time.Now().Add(60 * time.Second))
		if _, err := conn.Write([]byte(head)); err != nil {
			return
		}
		sent := 0
		first := body
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for sent < declared {
			n := min(chunk, declared-sent)
			buf := bytes.Repeat([]byte("x"), n)
			if len(first) > 0 {
				k := copy(buf, first)
				first = first[k:]
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
			sent += n
			select {
			case tr.progress <- struct{}{}:
			default:
			}
			select {
			case <-tr.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	t.Cleanup(tr.close)
	return tr
}

func (tr *bbTrickler) close() {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	tr.conn.Close()
	<-tr.done
}

// response reads the answer's head and (some of) its body.
func (tr *bbTrickler) response(d time.Duration) (*http.Response, []byte, time.Duration, error) {
	_ = tr.conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(tr.conn), nil)
	took := time.Since(tr.start)
	if err != nil {
		return nil, nil, took, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp, body, took, nil
}

func TestBlackboxTrickledBodyGets408(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name            string
		declared, chunk int
	}{
		{"1KB", 1000, 8},
		{"4MB", 4_000_000, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := bbStart(t, demotools.NewServer("bb-body", "1"), streamable.Config{BodyReadTimeout: timeout}, nil)
			ctx := testutil.Context(t, 30*time.Second)
			c := rig.session(t, ctx)

			tr := bbTrickle(t, rig.url, c.SessionID, tc.declared, tc.chunk, 20*time.Millisecond)
			resp, body, took, err := tr.response(10 * time.Second)
			if err != nil {
				t.Fatalf("no answer to a trickled body after %v: %v", took, err)
			}
			t.Logf("answer %d after %v: %.200s", resp.StatusCode, took, body)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408", resp.StatusCode)
			}
			if took < timeout*9/10 {
				t.Errorf("408 after %v, before BodyReadTimeout %v", took, timeout)
			}
			if took > timeout+3*time.Second {
				t.Errorf("408 after %v, long after BodyReadTimeout %v", took, timeout)
			}
			if _, code := bbErrorBody(t, body); code != -32600 {
				t.Errorf("JSON-RPC code %d, want -32600", code)
			}
			// The session is unharmed.
			if r, err := c.CallTool(ctx, "echo", map[string]any{"text": "still here"}); err != nil || r.Status != http.StatusOK {
				t.Errorf("session after a 408: %v %+v", err, r)
			}
		})
	}
}

func TestBlackboxShutdownWhileBodiesTrickle(t *testing.T) {
	entered := make(chan struct{}, 16)
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.ContentLength >= 1000 {
				entered <- struct{}{}
			}
			next.ServeHTTP(w, r)
		})
	}
	rig := bbStart(t, demotools.NewServer("bb-body", "1"), streamable.Config{}, wrap) // BodyReadTimeout 30 s
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	small := bbTrickle(t, rig.url, c.SessionID, 1000, 8, 20*time.Millisecond)
	large := bbTrickle(t, rig.url, c.SessionID, 4_000_000, 1024, 20*time.Millisecond)
	bbAwait(t, entered, 5*time.Second, "first trickled POST reached the handler")
	bbAwait(t, entered, 5*time.Second, "second trickled POST reached the handler")
	// A few more chunks each, so that the transport is reading the bodies.
	for range 3 {
		bbAwait(t, small.progress, 5*time.Second, "small body progress")
		bbAwait(t, large.progress, 5*time.Second, "large body progress")
	}

	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := rig.h.Shutdown(shutCtx)
	took := time.Since(start)
	t.Logf("Shutdown returned %v after %v", err, took)
	if err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("Shutdown took %v while bodies trickled (BodyReadTimeout 30 s): not prompt", took)
	}
	for name, tr := range map[string]*bbTrickler{"1KB": small, "4MB": large} {
		resp, body, _, err := tr.response(5 * time.Second)
		if err != nil {
			t.Errorf("%s trickler: no answer after Shutdown: %v", name, err)
			continue
		}
		t.Logf("%s trickler: %d %.200s", name, resp.StatusCode, body)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s trickler: status %d, want 503 (README: a body still arriving when Shutdown began)", name, resp.StatusCode)
		}
	}
}

// ---------------------------------------------------------------- 5: subscriptions
