package streamable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// BenchmarkServePost measures what the transport's handler costs per
// tools/call answered as JSON, without a network or a client: the request
// is handed to ServeHTTP as net/http would hand it (a fresh cancellable
// context per request, the listener's address in it). The floor is the
// same MCPServer's HandleMessage with the answer marshalled and written,
// which any transport on mcp-go pays; the difference is the transport's.
func BenchmarkServePost(b *testing.B) {
	request := benchToolsCallRequest

	// lifeline with its defaults (the memory event log on), and with
	// resumability off, the path to compare with a checkout before the
	// event log.
	// And with the session bound to a caller (Identify runs, and the
	// identity is hashed and compared, on every request).
	bound := func(*http.Request) (string, error) { return "user-0123456789abcdef0123456789abcdef", nil }
	for _, bc := range []struct {
		name     string
		noLog    bool
		identify func(*http.Request) (string, error)
	}{{"lifeline", false, nil}, {"lifeline-no-event-log", true, nil}, {"lifeline-bound-caller", false, bound}} {
		b.Run(bc.name, func(b *testing.B) {
			benchServePostLifeline(b, streamable.Config{DisableEventLog: bc.noLog, Identify: bc.identify})
		})
	}
	// A resumable request where net/http's HTTP/1 server does not serve it
	// (HTTP/2, Handle, a middleware's writer): on a worker goroutine.
	b.Run("lifeline-worker", func(b *testing.B) {
		benchServePostLifelineOn(b, streamable.Config{}, false)
	})
	// The floor, and the floor with a session in the context: what
	// mcp-go's HandleMessage does more for a request that has one (its
	// in-flight key names the session; its tool lookup asks the session for
	// tools of its own), which any transport with sessions pays.
	for _, withSession := range []bool{false, true} {
		name := "floor"
		if withSession {
			name = "floor-with-session"
		}
		b.Run(name, func(b *testing.B) {
			s := demotools.NewServer("bench", "1")
			sess := &floorSession{id: "0b9e2c43-6f4e-4d55-9a59-2d1f7a3c8e10", ch: make(chan mcp.JSONRPCNotification, 1)}
			w := &sinkWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, cancel := request("")
				w.reset()
				body, _ := io.ReadAll(r.Body)
				ctx := r.Context()
				if withSession {
					ctx = s.WithContext(ctx, sess)
				}
				resp := s.HandleMessage(ctx, body)
				out, _ := json.Marshal(resp)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(out)
				cancel()
			}
		})
	}
}

// floorSession is the least server.ClientSession: an id, a notification
// channel, initialized.
type floorSession struct {
	id string
	ch chan mcp.JSONRPCNotification
}

func (f *floorSession) SessionID() string                                   { return f.id }
func (f *floorSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return f.ch }
func (f *floorSession) Initialize()                                         {}
func (f *floorSession) Initialized() bool                                   { return true }

// benchInitialize runs initialize through h and returns the session id.
func benchInitialize(b *testing.B, h http.Handler, request func(string) (*http.Request, context.CancelFunc)) string {
	b.Helper()
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	r, cancel := request("")
	defer cancel()
	r.Body = io.NopCloser(bytes.NewReader([]byte(init)))
	r.ContentLength = int64(len(init))
	w := &sinkWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	id := w.h.Get("Mcp-Session-Id")
	if w.status != http.StatusOK || id == "" {
		b.Fatalf("initialize: status %d: %s", w.status, w.body.String())
	}
	return id
}

// sinkWriter is a reusable http.ResponseWriter that keeps the answer.
type sinkWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (w *sinkWriter) reset() {
	clear(w.h)
	w.status = 0
	w.body.Reset()
}

func (w *sinkWriter) Header() http.Header { return w.h }

func (w *sinkWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *sinkWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// SetReadDeadline is what net/http's writer offers the body read's bound
// (a no-op here: the body is in memory).
func (w *sinkWriter) SetReadDeadline(time.Time) error { return nil }

// BenchmarkServeModernPost is BenchmarkServePost for a 2026-07-28
// tools/call: no session, the version and capabilities in _meta, the
// Mcp-Method and Mcp-Name headers. Its floor is HandleMessage on the same
// body.
func BenchmarkServeModernPost(b *testing.B) {
	local := modernBenchAddr()
	b.Run("lifeline", func(b *testing.B) {
		h := newModernBenchHandler()
		defer h.Close()
		w := &sinkWriter{h: http.Header{}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := serveModernBenchCall(h, w, local); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		s := demotools.NewServer("bench", "1")
		w := &sinkWriter{h: http.Header{}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := floorModernBenchCall(s, w, local, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkServeModernPostParallel is BenchmarkServeModernPost with
// calls served on every core at once (32 goroutines a core), as a server
// under load serves them: what a call costs when the cores share the
// handler's locks and the collector's work. Beside the floor, the floor
// with the tool lookup a 2026-07-28 tools/call's header checks need
// (SEP-2243: a tool's x-mcp-header parameters are in its schema):
// GetTool, mcp-go's only single-tool getter, copies the tool to the heap
// under its tools lock, which HandleMessage then takes again for the
// call. That is the least a transport that checks the headers pays
// through mcp-go's exported API.
func BenchmarkServeModernPostParallel(b *testing.B) {
	local := modernBenchAddr()
	b.Run("lifeline", func(b *testing.B) {
		h := newModernBenchHandler()
		defer h.Close()
		runModernParallel(b, func(w *sinkWriter) error { return serveModernBenchCall(h, w, local) })
	})
	for _, lookup := range []bool{false, true} {
		name := "floor"
		if lookup {
			name = "floor-with-tool-lookup"
		}
		b.Run(name, func(b *testing.B) {
			s := demotools.NewServer("bench", "1")
			runModernParallel(b, func(w *sinkWriter) error { return floorModernBenchCall(s, w, local, lookup) })
		})
	}
}

// runModernParallel times call from 32 goroutines a core, each with a
// writer of its own, and reports the first failure once; the timer runs
// only while they do.
func runModernParallel(b *testing.B, call func(w *sinkWriter) error) {
	var failed sync.Once
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &sinkWriter{h: http.Header{}}
		for pb.Next() {
			if err := call(w); err != nil {
				failed.Do(func() { b.Error(err) })
				return
			}
		}
	})
	b.StopTimer()
}

// modernBenchCall is the 2026-07-28 tools/call the modern benchmarks send.
const modernBenchCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// modernBenchAddr is the listener's address the modern benchmarks'
// requests carry, made once for a benchmark and only read after.
func modernBenchAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
}

// modernBenchRequest is modernBenchCall as net/http would hand it to
// ServeHTTP: a fresh cancellable context with the listener's address,
// local, in it, and the 2026-07-28 headers.
func modernBenchRequest(local net.Addr) (*http.Request, context.CancelFunc) {
	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, local)
	ctx, cancel := context.WithCancel(ctx)
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8080/mcp", bytes.NewReader([]byte(modernBenchCall)))
	r.ContentLength = int64(len(modernBenchCall))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "echo")
	return r, cancel
}

// newModernBenchHandler is the lifeline the modern benchmarks serve with:
// its defaults, the demo's tools, a 20 s heartbeat and no log output.
func newModernBenchHandler() *streamable.Handler {
	return streamable.New(demotools.NewServer("bench", "1"), streamable.Config{
		HeartbeatInterval: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// serveModernBenchCall serves one modernBenchRequest through h into w,
// and says what was wrong if the answer is not a 200.
func serveModernBenchCall(h *streamable.Handler, w *sinkWriter, local net.Addr) error {
	r, cancel := modernBenchRequest(local)
	w.reset()
	h.ServeHTTP(w, r)
	cancel()
	if w.status != http.StatusOK {
		return fmt.Errorf("status %d: %s", w.status, w.body.String())
	}
	return nil
}

// floorModernBenchCall answers one modernBenchRequest as the floor does:
// HandleMessage on the body, the answer marshalled and written; first,
// with lookup, the tool looked up as the header checks need.
func floorModernBenchCall(s *server.MCPServer, w *sinkWriter, local net.Addr, lookup bool) error {
	r, cancel := modernBenchRequest(local)
	defer cancel()
	w.reset()
	body, _ := io.ReadAll(r.Body)
	if lookup && s.GetTool("echo") == nil {
		return errors.New("the demo server has no echo tool")
	}
	resp := s.HandleMessage(r.Context(), body)
	out, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}

// benchHTTPServer is the server benchToolsCallRequest's requests name
// (never started).
var benchHTTPServer = &http.Server{}

// benchToolsCallRequest is the tools/call BenchmarkServePost and its variants
// send, as net/http would hand it to ServeHTTP: a fresh cancellable
// context with the server and the listener's address in it, on session id
// ("" for none).
func benchToolsCallRequest(id string) (*http.Request, context.CancelFunc) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	ctx := context.WithValue(context.Background(), http.ServerContextKey, benchHTTPServer)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, net.Addr(local))
	ctx, cancel := context.WithCancel(ctx)
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8080/mcp", bytes.NewReader([]byte(call)))
	r.ContentLength = int64(len(call))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if id != "" {
		r.Header.Set("Mcp-Session-Id", id)
	}
	return r, cancel
}

// benchServePostLifeline is BenchmarkServePost's lifeline case with cfg
// (its heartbeat and logger set here): benchToolsCallRequest on one session,
// answered as JSON, through a writer that stands in for net/http's HTTP/1
// one (its resumable requests run on the handler goroutine).
func benchServePostLifeline(b *testing.B, cfg streamable.Config) {
	benchServePostLifelineOn(b, cfg, true)
}

// benchServePostLifelineOn is benchServePostLifeline, through a writer
// that is not net/http's (HTTP/2, Handle, a middleware's: its resumable
// requests run on a worker) unless http1.
func benchServePostLifelineOn(b *testing.B, cfg streamable.Config, http1 bool) {
	cfg.HeartbeatInterval = 20 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h := streamable.New(demotools.NewServer("bench", "1"), cfg)
	defer h.Close()
	id := benchInitialize(b, h, benchToolsCallRequest)
	w := &sinkWriter{h: http.Header{}}
	var rw http.ResponseWriter = w
	if http1 {
		rw = streamable.AsNetHTTPWriter(w)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, cancel := benchToolsCallRequest(id)
		w.reset()
		h.ServeHTTP(rw, r)
		cancel()
		if w.status != http.StatusOK {
			b.Fatalf("status %d: %s", w.status, w.body.String())
		}
	}
}
