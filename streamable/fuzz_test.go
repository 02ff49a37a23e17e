package streamable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// The fuzz targets here feed arbitrary client input to a Handler through
// ServeHTTP, in process, and check what every input must get: no panic, no
// 500, a status the transport documents, a JSON-RPC error body (which
// echoes the request's id when it had one) on every JSON refusal, and a
// session that is still there and still answers afterwards. Run each
// longer with, for example,
//
//	go test -run '^$' -fuzz '^FuzzPOST$' -fuzztime 10m ./streamable/
//
// (CI runs each for a few seconds; the seeds run with every go test.)

// fuzzHandler is a Handler with one live session, shared by a fuzz
// target's inputs.
type fuzzHandler struct {
	h       *streamable.Handler
	session string
}

func newFuzzHandler(f *testing.F) *fuzzHandler {
	f.Helper()
	s := server.NewMCPServer("fuzz", "1", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	h := streamable.New(s, streamable.Config{MaxBodyBytes: 64 << 10})
	f.Cleanup(func() { _ = h.Close() })
	fh := &fuzzHandler{h: h}
	rec := fh.post(f, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`)
	fh.session = rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || fh.session == "" {
		f.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	if rec := fh.post(f, fh.session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); rec.Code != http.StatusAccepted {
		f.Fatalf("notifications/initialized: %d %s", rec.Code, rec.Body)
	}
	return fh
}

func (fh *fuzzHandler) post(t testing.TB, session, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	rec := httptest.NewRecorder()
	fh.h.ServeHTTP(rec, req)
	return rec
}

// stillServes checks that the live session still answers a ping.
func (fh *fuzzHandler) stillServes(t *testing.T) {
	t.Helper()
	rec := fh.post(t, fh.session, `{"jsonrpc":"2.0","id":"alive","method":"ping"}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"alive"`) {
		t.Fatalf("the session no longer answers a ping: %d %s", rec.Code, rec.Body)
	}
}

// documented are the statuses the transport answers with (streamable/status.go).
var documented = map[int]bool{200: true, 202: true, 400: true, 403: true, 404: true, 405: true, 406: true,
	408: true, 409: true, 413: true, 415: true, 429: true, 503: true}

// checkAnswer checks an answer to body: a documented status, and on a JSON
// refusal a JSON-RPC error that echoes the id when body was a request.
func checkAnswer(t *testing.T, body []byte, code int, header http.Header, answer []byte) {
	t.Helper()
	if !documented[code] {
		t.Fatalf("status %d (undocumented) for %q: %s", code, body, answer)
	}
	if code < 400 || !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		return
	}
	var e struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &e); err != nil || e.Error == nil || e.Error.Message == "" || e.Error.Code == 0 {
		t.Fatalf("status %d for %q: not a JSON-RPC error saying what was wrong: %s", code, body, answer)
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	// A request's id is echoed; a response's is not (an error carrying it
	// would read as the answer to a request of the client's own), nor is
	// it on a session's 404, which names no call (status.go, forRequest).
	if json.Unmarshal(bytes.TrimSpace(body), &req) != nil || !usableID(req.ID) || req.Method == nil || code == http.StatusNotFound {
		return
	}
	if !sameJSON(req.ID, e.ID) {
		t.Fatalf("status %d for %q: the error's id is %s, want the request's %s", code, body, e.ID, req.ID)
	}
}

// usableID reports whether id is a JSON-RPC request id an answer can echo:
// a string or a number.
func usableID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || string(id) == "null" {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// FuzzPOST sends arbitrary bodies, with the live session's id, another id
// or none, and arbitrary version, Accept and Content-Type headers.
func FuzzPOST(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{`, ``, `null`, `"str"`,
	} {
		f.Add([]byte(s), uint8(1), "2025-11-25", "application/json, text/event-stream", "application/json")
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), uint8(0), "", "*/*", "application/json; charset=utf-8")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), uint8(2), "1999-01-01", "text/html", "text/plain")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), uint8(1), "2026-07-28", "application/json", "application/json")
	fh := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte, mode uint8, version, accept, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		setHeader(req.Header, "Content-Type", contentType)
		setHeader(req.Header, "Accept", accept)
		setHeader(req.Header, "Mcp-Protocol-Version", version)
		switch mode % 3 {
		case 1:
			req.Header.Set("Mcp-Session-Id", fh.session)
		case 2:
			setHeader(req.Header, "Mcp-Session-Id", version) // some other id
		}
		rec := newSyncRecorder()
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { defer close(done); fh.h.ServeHTTP(rec, req.WithContext(ctx)) }()
		rec.awaitAnswer(t, done)
		cancel() // ends an SSE answer that is still open
		<-done
		code, header, answer := rec.result()
		checkAnswer(t, body, code, header, answer)
		fh.stillServes(t)
	})
}

// FuzzGET opens the session's stream with an arbitrary Last-Event-ID,
// version and Accept header, or with another session id.
func FuzzGET(f *testing.F) {
	for _, id := range []string{"", "get/1-0", "get/", "p0123456789abcdef/1-0", "p0123456789abcdef-MQ/1-0",
		"pzzzzzzzzzzzzzzzz/1", "get/../../x", strings.Repeat("a", 5000), "get/1\r\nx", "/", "p0123456789abcdef-/1"} {
		f.Add(id, uint8(1), "2025-11-25", "text/event-stream")
	}
	f.Add("get/1-0", uint8(2), "2025-06-18", "application/json")
	fh := newFuzzHandler(f)
	f.Fuzz(func(t *testing.T, lastEventID string, mode uint8, version, accept string) {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
		setHeader(req.Header, "Accept", accept)
		setHeader(req.Header, "Mcp-Protocol-Version", version)
		setHeader(req.Header, "Last-Event-ID", lastEventID)
		switch mode % 3 {
		case 1:
			req.Header.Set("Mcp-Session-Id", fh.session)
		case 2:
			setHeader(req.Header, "Mcp-Session-Id", lastEventID)
		}
		rec := newSyncRecorder()
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { defer close(done); fh.h.ServeHTTP(rec, req.WithContext(ctx)) }()
		rec.awaitAnswer(t, done)
		cancel() // ends a stream that opened
		<-done
		code, header, answer := rec.result()
		checkAnswer(t, nil, code, header, answer)
		fh.stillServes(t)
	})
}

// setHeader sets a header the fuzzer chose, unless net/http would refuse
// it on the wire (then the request goes without it).
func setHeader(h http.Header, key, value string) {
	if value == "" || strings.ContainsAny(value, "\r\n\x00") {
		return
	}
	h.Set(key, value)
}

// syncRecorder is a ResponseWriter whose status is known as soon as it is
// written, read safely from another goroutine.
type syncRecorder struct {
	mu      sync.Mutex
	header  http.Header
	code    int
	body    bytes.Buffer
	written chan struct{}
}

func newSyncRecorder() *syncRecorder {
	return &syncRecorder{header: http.Header{}, written: make(chan struct{})}
}

func (r *syncRecorder) Header() http.Header { return r.header }

func (r *syncRecorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code == 0 {
		r.code = code
		close(r.written)
	}
}

func (r *syncRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.Write(p)
}

func (r *syncRecorder) Flush() {}

// awaitAnswer waits until the handler has written its status or returned.
func (r *syncRecorder) awaitAnswer(t *testing.T, done <-chan struct{}) {
	t.Helper()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-r.written:
	case <-done:
	case <-timer.C:
		t.Fatal("the handler neither answered nor returned")
	}
}

func (r *syncRecorder) result() (int, http.Header, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	code := r.code
	if code == 0 {
		code = http.StatusOK
	}
	return code, r.header.Clone(), bytes.Clone(r.body.Bytes())
}
