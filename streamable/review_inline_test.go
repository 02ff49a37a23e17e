package streamable_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// reviewRig is a lifeline handler with a "polled" tool that lets go of
// its response (CloseSSEStream) and then runs until finish closes, served
// by an HTTP/1 httptest server whose Config setup may change.
type reviewRig struct {
	h        *streamable.Handler
	ts       *httptest.Server
	c        *testutil.Client
	released chan bool
	finish   chan struct{}
	once     sync.Once

	mu      sync.Mutex
	states  map[net.Conn][]http.ConnState
	changed chan struct{} // a connection changed state (coalesced)
}

func newReviewRig(t *testing.T, wrap func(http.Handler) http.Handler, setup func(*http.Server)) *reviewRig {
	t.Helper()
	return newReviewRigOn(t, wrap, setup, false, streamable.Config{})
}

func newReviewRigTLS(t *testing.T, wrap func(http.Handler) http.Handler) *reviewRig {
	t.Helper()
	return newReviewRigOn(t, wrap, nil, true, streamable.Config{})
}

func newReviewRigOn(t *testing.T, wrap func(http.Handler) http.Handler, setup func(*http.Server), useTLS bool, cfg streamable.Config) *reviewRig {
	t.Helper()
	r := &reviewRig{released: make(chan bool, 1), finish: make(chan struct{}), states: map[net.Conn][]http.ConnState{}, changed: make(chan struct{}, 1)}
	s := demotools.NewServer("lifeline-test", "1")
	s.AddTool(mcp.NewTool("polled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r.released <- streamable.CloseSSEStream(ctx)
		select {
		case <-r.finish:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return mcp.NewToolResultText("answered after the let-go"), nil
	})
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = testHeartbeat
	}
	r.h = streamable.New(s, cfg)
	var h http.Handler = r.h
	if wrap != nil {
		h = wrap(h)
	}
	r.ts = httptest.NewUnstartedServer(h)
	r.ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	r.ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.states[c] = append(r.states[c], st)
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	if setup != nil {
		setup(r.ts.Config)
	}
	if useTLS {
		r.ts.StartTLS()
	} else {
		r.ts.Start()
	}
	t.Cleanup(func() {
		r.finishTool()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := r.h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		r.ts.Close()
	})
	r.c = testutil.NewClient(r.ts.URL)
	r.c.HTTP = r.ts.Client()
	if _, err := r.c.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *reviewRig) finishTool() { r.once.Do(func() { close(r.finish) }) }

// handedBack returns the connection that was taken over and given back to
// the server (hijacked, then new again), or nil.
func (r *reviewRig) handedBack() net.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, sts := range r.states {
		for i := 0; i+1 < len(sts); i++ {
			if sts[i] == http.StateHijacked && sts[i+1] == http.StateNew {
				return c
			}
		}
	}
	return nil
}

// awaitState waits, at most d, until cond holds of the connections'
// states, re-checking it at each change; it reports whether it held.
func (r *reviewRig) awaitState(d time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for !cond() {
		select {
		case <-r.changed:
		case <-t.C:
			return cond()
		}
	}
	return true
}

func (r *reviewRig) closed(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	sts := r.states[c]
	return len(sts) > 0 && sts[len(sts)-1] == http.StateClosed
}

var pollCall = map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": map[string]any{"name": "polled"}}

// letGoResponse POSTs the polled call and reads its response to its end,
// returning the error it ended with (io.EOF: a clean end).
func (r *reviewRig) letGoResponse(t *testing.T, header map[string]string) error {
	t.Helper()
	ctx := testutil.Context(t, wait)
	r.c.Header = header
	call, err := r.c.PostStream(ctx, pollCall)
	r.c.Header = nil
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	// CloseSSEStream returns once the response was let go of, or at once
	// when that was refused (the response then lasts as long as the call).
	if !bbAwait(t, r.released, wait, "CloseSSEStream returned") {
		t.Fatal("CloseSSEStream reported false: the response was not let go of")
	}
	var end error
	sawID := false
	for {
		ev, err := call.Next(ctx)
		if err != nil {
			end = err
			break
		}
		if ev.ID != "" {
			sawID = true
		}
	}
	if !sawID {
		t.Fatal("the let-go response carried no event id")
	}
	return end
}

// A client that sent Connection: close gets a let-go response that ends
// cleanly, as it did when the request ran on a worker (net/http then ended
// the chunked body before closing): a stream that was whole is not cut.
func TestInlineReviewLetGoForAConnectionCloseClientEndsCleanly(t *testing.T) {
	r := newReviewRig(t, nil, nil)
	end := r.letGoResponse(t, map[string]string{"Connection": "close"})
	if !errors.Is(end, io.EOF) {
		t.Fatalf("the let-go response of a Connection: close client ended with %v: want its clean end (io.EOF)", end)
	}
}

// rawLetGo sends the polled call on a raw connection of its own to the
// rig's server and reads its let-go response to its end (the chunked
// body's last chunk), returning the connection and its reader.
func (r *reviewRig) rawLetGo(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(r.ts.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(wait))
	body, _ := json.Marshal(pollCall)
	req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n"+
		"Content-Length: %d\r\n\r\n%s", host, r.c.SessionID, testutil.ProtocolVersion, len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || !strings.Contains(string(b), "id: ") {
		t.Fatalf("the let-go response: %q %v: want its priming event and a clean end", b, err)
	}
	if !bbAwait(t, r.released, wait, "CloseSSEStream returned") {
		t.Fatal("CloseSSEStream reported false")
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br
}

// awaitServerClose reads conn until the server closes it (EOF), at most
// d; it reports whether it did.
func awaitServerClose(conn net.Conn, br *bufio.Reader, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// A connection whose let-go response ended, and that its client then
// leaves idle, is closed after the server's IdleTimeout, as every idle
// keep-alive connection of that server is.
func TestInlineReviewHandedBackIdleConnectionHonoursIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	r := newReviewRig(t, nil, func(s *http.Server) { s.IdleTimeout = idle })
	conn, br := r.rawLetGo(t)
	// The client sends nothing more on it.
	if deadline := 15 * idle; !awaitServerClose(conn, br, deadline) {
		t.Fatalf("the let-go response's connection, idle, was still open %v after the let-go with IdleTimeout %v: want it closed as an idle keep-alive connection", deadline, idle)
	}
}

// Handler.Shutdown then http.Server.Shutdown (the order the server
// package uses) returns promptly after a let-go whose connection its
// client left idle: an idle keep-alive connection is closed at once.
func TestInlineReviewServerShutdownIsNotHeldByAHandedBackIdleConnection(t *testing.T) {
	for _, order := range []string{"handler first", "server first"} {
		t.Run(order, func(t *testing.T) {
			r := newReviewRig(t, nil, nil)
			conn, br := r.rawLetGo(t)
			r.finishTool()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			const bound = 2 * time.Second
			sctx, scancel := context.WithTimeout(context.Background(), bound)
			defer scancel()
			start := time.Now()
			shutServer := func() {
				if err := r.ts.Config.Shutdown(sctx); err != nil {
					t.Fatalf("http.Server.Shutdown after a let-go: %v after %v (bound %v): the let-go's idle connection holds it", err, time.Since(start).Round(time.Millisecond), bound)
				}
			}
			if order == "server first" {
				shutServer()
			}
			if err := r.h.Shutdown(ctx); err != nil {
				t.Fatalf("Handler.Shutdown: %v", err)
			}
			if order == "handler first" {
				shutServer()
			}
			if !awaitServerClose(conn, br, bound) {
				t.Fatal("the let-go response's idle connection is still open after both shut down")
			}
		})
	}
}

// gzipHijacker is a compressing middleware's writer that passes Hijack on
// (as httpsnoop-based ones do): it ends its body (the gzip footer) after
// the handler returns.
type gzipHijacker struct {
	w  http.ResponseWriter
	gz *gzip.Writer
}

func (g *gzipHijacker) Header() http.Header { return g.w.Header() }
func (g *gzipHijacker) WriteHeader(status int) {
	g.w.Header().Del("Content-Length")
	g.w.Header().Set("Content-Encoding", "gzip")
	g.w.WriteHeader(status)
}
func (g *gzipHijacker) Write(p []byte) (int, error) { return g.gz.Write(p) }
func (g *gzipHijacker) Flush() {
	_ = g.gz.Flush()
	_ = http.NewResponseController(g.w).Flush()
}
func (g *gzipHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(g.w).Hijack()
}
func (g *gzipHijacker) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(g.w).SetWriteDeadline(t)
}

func gzipOn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Review-Gzip") == "" {
			next.ServeHTTP(w, r)
			return
		}
		g := &gzipHijacker{w: w, gz: gzip.NewWriter(w)}
		next.ServeHTTP(g, r)
		_ = g.gz.Close()
	})
}

// Behind a middleware whose writer transforms the body and passes Hijack
// on, a let-go response is still a whole body: the middleware gets to end
// it (here, the gzip footer), as when the request ran on a worker.
func TestInlineReviewLetGoBehindAHijackingMiddlewareKeepsItsBodyWhole(t *testing.T) {
	gzipLetGo(t, gzipOn)
}

func gzipLetGo(t *testing.T, wrap func(http.Handler) http.Handler) {
	r := newReviewRig(t, wrap, nil)
	ctx := testutil.Context(t, wait)
	body, _ := json.Marshal(pollCall)
	req, err := r.c.NewRequest(ctx, http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Review-Gzip", "1")
	req.Header.Set("Accept-Encoding", "gzip") // set here: the transport does not decode it
	resp, err := r.c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("status %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if !bbAwait(t, r.released, wait, "CloseSSEStream returned") {
		t.Fatal("CloseSSEStream reported false")
	}
	if !strings.Contains(string(got), "id: ") {
		t.Fatalf("the let-go response carried %q: want its priming id", got)
	}
	if err != nil {
		t.Fatalf("the let-go response's gzip body ended with %v after %q: want a whole body", err, got)
	}
}

// hijackForwarder is a middleware's writer that always has Hijack (as
// many do) and forwards it to the writer it wraps, which here cannot
// (another middleware's, without Hijack): Hijack reports an error.
type hijackForwarder struct{ w http.ResponseWriter }

func (f hijackForwarder) Header() http.Header         { return f.w.Header() }
func (f hijackForwarder) Write(p []byte) (int, error) { return f.w.Write(p) }
func (f hijackForwarder) WriteHeader(status int)      { f.w.WriteHeader(status) }
func (f hijackForwarder) Unwrap() http.ResponseWriter { return f.w }
func (f hijackForwarder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(f.w).Hijack()
}

// A writer whose Hijack exists but fails still lets go of its response
// while the request runs (CloseSSEStream reports true and the response
// ends cleanly), as every writer did when the request ran on a worker.
func TestInlineReviewLetGoThroughAWriterWhoseHijackFails(t *testing.T) {
	r := newReviewRig(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h.ServeHTTP(hijackForwarder{noHijack{w}}, req)
		})
	}, nil)
	if end := r.letGoResponse(t, nil); !errors.Is(end, io.EOF) {
		t.Fatalf("the let-go response ended with %v", end)
	}
}

// pipelined writes two requests to the rig's server on one connection in
// one write, the polled call then a ping (marked X-N 1 and 2), and
// returns the two responses' bodies.
func (r *reviewRig) pipelined(t *testing.T, conn net.Conn, host string) (first, second string) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(wait))
	body, _ := json.Marshal(pollCall)
	ping := []byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	mk := func(n string, b []byte) string {
		return fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nX-N: %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n"+
			"Content-Length: %d\r\n\r\n%s", host, n, r.c.SessionID, testutil.ProtocolVersion, len(b), b)
	}
	if _, err := io.WriteString(conn, mk("1", body)+mk("2", ping)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for i, out := range []*string{&first, &second} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("response %d: %d %q %v", i+1, resp.StatusCode, b, err)
		}
		*out = string(b)
	}
	if !bbAwait(t, r.released, wait, "CloseSSEStream returned") {
		t.Fatal("CloseSSEStream reported false")
	}
	return first, second
}

// Passing guard: a request the client pipelined behind the let-go one,
// read by net/http before the connection was taken over, is served on the
// given-back connection, none of its bytes lost.
func TestInlineReviewPipelinedRequestIsServedOnTheGivenBackConnection(t *testing.T) {
	r := newReviewRig(t, nil, nil)
	host := strings.TrimPrefix(r.ts.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	first, second := r.pipelined(t, conn, host)
	if !strings.Contains(first, "id: ") || !strings.Contains(second, `"id":9`) {
		t.Fatalf("responses %q and %q: want the let-go stream, then the ping's answer", first, second)
	}
}

// On a TLS connection, a request pipelined behind the let-go one is still
// served as a TLS request (r.TLS set) on the given-back connection.
func TestInlineReviewPipelinedRequestOnTLSKeepsItsTLSState(t *testing.T) {
	var mu sync.Mutex
	isTLS := map[string]bool{}
	r := newReviewRigTLS(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if n := req.Header.Get("X-N"); n != "" {
				mu.Lock()
				isTLS[n] = req.TLS != nil
				mu.Unlock()
			}
			h.ServeHTTP(w, req)
		})
	})
	host := strings.TrimPrefix(r.ts.URL, "https://")
	conn, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	first, second := r.pipelined(t, conn, host)
	if !strings.Contains(first, "id: ") || !strings.Contains(second, `"id":9`) {
		t.Fatalf("responses %q and %q: want the let-go stream, then the ping's answer", first, second)
	}
	mu.Lock()
	defer mu.Unlock()
	if !isTLS["1"] || !isTLS["2"] {
		t.Fatalf("r.TLS set: %v; want both requests of the TLS connection served as TLS", isTLS)
	}
}
