package streamable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// frameworkWriter is a fake framework's server.HTTPResponseWriter: it
// buffers the body (stream false, CanStream false) or hands it to a pipe
// that the test reads (stream true).
type frameworkWriter struct {
	header http.Header
	stream bool
	pr     *io.PipeReader
	pw     *io.PipeWriter

	mu     sync.Mutex
	status int
	body   bytes.Buffer
	timer  *time.Timer
}

func newFrameworkWriter(stream bool) *frameworkWriter {
	w := &frameworkWriter{header: make(http.Header), stream: stream}
	if stream {
		w.pr, w.pw = io.Pipe()
	}
	return w
}

func (w *frameworkWriter) Header() http.Header { return w.header }
func (w *frameworkWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}
func (w *frameworkWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.stream {
		return w.pw.Write(p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}
func (w *frameworkWriter) Flush()          {}
func (w *frameworkWriter) CanStream() bool { return w.stream }

func (w *frameworkWriter) result() (int, http.Header, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.header, bytes.Clone(w.body.Bytes())
}

// deadlineWriter is a streaming frameworkWriter with a write deadline: a
// write still blocked when it passes fails, and so does every later one.
type deadlineWriter struct{ *frameworkWriter }

func (w deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if t.IsZero() {
		return nil
	}
	pw := w.pw
	w.timer = time.AfterFunc(time.Until(t), func() { _ = pw.CloseWithError(os.ErrDeadlineExceeded) })
	return nil
}

// handleRequest builds the framework's view of a request.
func handleRequest(ctx context.Context, method, session string, body any) *server.HTTPRequest {
	hdr := http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"}}
	if session != "" {
		hdr.Set("Mcp-Session-Id", session)
		hdr.Set("Mcp-Protocol-Version", testutil.ProtocolVersion)
	}
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	return &server.HTTPRequest{Method: method, Header: hdr, Body: b, Context: ctx}
}

// handleInit initializes a session through Handle with a buffered writer.
func handleInit(t *testing.T, h *streamable.Handler, ctx context.Context) string {
	t.Helper()
	w := newFrameworkWriter(false)
	h.Handle(w, handleRequest(ctx, http.MethodPost, "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "framework", "version": "1"}}}))
	status, hdr, body := w.result()
	wantStatus(t, "initialize through Handle", status, http.StatusOK, body)
	id := hdr.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize through Handle: no session id (%q)", body)
	}
	w = newFrameworkWriter(false)
	h.Handle(w, handleRequest(ctx, http.MethodPost, id, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}))
	if status, _, body := w.result(); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", status, body)
	}
	return id
}

// TestHandleBufferedWriter: through Handle with a writer that cannot
// stream, a session is created, served and deleted; GET gets 405; a call
// that runs past the heartbeat interval without sending anything is still
// answered as JSON; a nil request gets 400.
func TestHandleBufferedWriter(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t := time.NewTimer(20 * testHeartbeat) // the tool's work: longer than a heartbeat
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("done"), nil
		})
	})
	ctx := testutil.Context(t, wait)
	id := handleInit(t, r.h, ctx)

	w := newFrameworkWriter(false)
	r.h.Handle(w, handleRequest(ctx, http.MethodPost, id, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "slow"}}))
	status, hdr, body := w.result()
	wantStatus(t, "slow call", status, http.StatusOK, body)
	if ct := hdr.Get("Content-Type"); ct != "application/json" || !strings.Contains(string(body), `"done"`) {
		t.Errorf("slow call through a buffered writer: %s %q, want its answer as JSON", ct, body)
	}

	// A call that sends messages: they come first, in an SSE body the
	// framework delivers whole.
	w = newFrameworkWriter(false)
	r.h.Handle(w, handleRequest(ctx, http.MethodPost, id, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "lifeline_progress", "arguments": map[string]any{"steps": 2},
			"_meta": map[string]any{"progressToken": "p"}}}))
	status, hdr, body = w.result()
	wantStatus(t, "progress call", status, http.StatusOK, body)
	if hdr.Get("Content-Type") != "text/event-stream" || strings.Count(string(body), "notifications/progress") != 2 ||
		!strings.Contains(string(body), `"id":3`) {
		t.Errorf("progress call through a buffered writer: %s %q, want its notifications and answer as SSE",
			hdr.Get("Content-Type"), body)
	}

	w = newFrameworkWriter(false)
	r.h.Handle(w, handleRequest(ctx, http.MethodGet, id, nil))
	status, hdr, body = w.result()
	wantStatus(t, "GET on a buffered writer", status, http.StatusMethodNotAllowed, body)
	if hdr.Get("Allow") != "POST, DELETE" || !strings.Contains(string(body), "cannot stream") {
		t.Errorf("GET 405: Allow %q, body %q", hdr.Get("Allow"), body)
	}

	// A 2026-07-28 listen stream could deliver nothing: refused.
	w = newFrameworkWriter(false)
	r.h.Handle(w, &server.HTTPRequest{Method: http.MethodPost, Context: ctx, Body: modernMsg(9, "subscriptions/listen", nil, nil),
		Header: http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
			"Mcp-Protocol-Version": {mcp.ProtocolVersion20260728}, "Mcp-Method": {"subscriptions/listen"}}})
	status, _, body = w.result()
	wantStatus(t, "listen on a buffered writer", status, http.StatusBadRequest, body)
	if !containsAll(string(body), "cannot hold a subscriptions/listen stream", `"id":9`) {
		t.Errorf("listen 400 body %q", body)
	}
	if st := r.h.Stats(); st.ListenStreams != 0 {
		t.Errorf("a refused listen left %d listen streams", st.ListenStreams)
	}

	w = newFrameworkWriter(false)
	r.h.Handle(w, nil)
	status, _, body = w.result()
	wantStatus(t, "nil request", status, http.StatusBadRequest, body)

	w = newFrameworkWriter(false)
	r.h.Handle(w, handleRequest(ctx, http.MethodDelete, id, nil))
	status, _, body = w.result()
	wantStatus(t, "DELETE through Handle", status, http.StatusOK, body)
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Errorf("after DELETE: %+v", st)
	}
}

// TestHandleStreamingWriter: with a writer that streams, a GET stream
// through Handle delivers as it goes (its opening, then pings), and DELETE
// ends it.
func TestHandleStreamingWriter(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	id := handleInit(t, r.h, ctx)
	w := newFrameworkWriter(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.pw.Close()
		r.h.Handle(deadlineWriter{w}, handleRequest(context.Background(), http.MethodGet, id, nil))
	}()
	rd := testutil.NewSSEReader(w.pr)
	sawPing := false
	for range 10 {
		ev, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		if m, err := ev.Message(); err == nil && m.Method == "ping" {
			sawPing = true
			break
		}
	}
	if !sawPing {
		t.Fatal("no ping on the GET stream through Handle")
	}
	go func() { _, _ = io.Copy(io.Discard, w.pr) }()
	dw := newFrameworkWriter(false)
	r.h.Handle(dw, handleRequest(ctx, http.MethodDelete, id, nil))
	if status, _, body := dw.result(); status != http.StatusOK {
		t.Fatalf("DELETE: %d %q", status, body)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the GET Handle did not return after DELETE")
	}
}

// TestHandleStalledStream: a GET stream through Handle whose client reads
// nothing is bounded by the write timeout when the framework's writer has
// a write deadline; without one, DELETE still ends the session within the
// cleanup timeout, and the Handle call returns once the framework's write
// does.
func TestHandleStalledStream(t *testing.T) {
	r := newRig(t, streamable.Config{WriteTimeout: 100 * time.Millisecond, CleanupTimeout: 200 * time.Millisecond})
	ctx := testutil.Context(t, wait)

	id := handleInit(t, r.h, ctx)
	w := newFrameworkWriter(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.h.Handle(deadlineWriter{w}, handleRequest(context.Background(), http.MethodGet, id, nil))
	}()
	select {
	case <-done: // the opening write failed at its deadline
	case <-ctx.Done():
		t.Fatal("a stalled GET stream through Handle with a write deadline was not bounded")
	}
	dw := newFrameworkWriter(false)
	r.h.Handle(dw, handleRequest(ctx, http.MethodDelete, id, nil))
	if status, _, body := dw.result(); status != http.StatusOK {
		t.Fatalf("DELETE: %d %q", status, body)
	}

	id2 := handleInit(t, r.h, ctx)
	w2 := newFrameworkWriter(true) // no SetWriteDeadline
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		r.h.Handle(w2, handleRequest(context.Background(), http.MethodGet, id2, nil))
	}()
	testutil.Eventually(t, wait, "the stalled stream is open", func() bool { return r.h.Stats().GetStreams == 1 })
	dw = newFrameworkWriter(false)
	r.h.Handle(dw, handleRequest(ctx, http.MethodDelete, id2, nil))
	if status, _, body := dw.result(); status != http.StatusOK {
		t.Fatalf("DELETE of a stalled session: %d %q", status, body)
	}
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Fatalf("after DELETE: %+v", st)
	}
	select {
	case <-done2:
		t.Fatal("the Handle call returned while the framework's write is blocked (the test's premise is wrong)")
	default:
	}
	_ = w2.pr.CloseWithError(io.ErrClosedPipe) // the framework's connection ends
	select {
	case <-done2:
	case <-ctx.Done():
		t.Fatal("the Handle call did not return once the framework's write failed")
	}
}
