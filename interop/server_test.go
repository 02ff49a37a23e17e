package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// Names of the tools the server under test offers.
const (
	toolEcho   = "echo"
	toolNotify = "interop_notify"
	toolSample = "interop_sample"
	// toolSampleOnStream asks for sampling on the session's GET stream
	// (streamable.OnSessionStream), wherever that stream is held.
	toolSampleOnStream = "interop_sample_on_stream"
)

// wait bounds every wait in these tests: a client that misbehaves fails a
// test, it never hangs it.
const wait = 15 * time.Second

// newMCPServer builds the server under test: an echo tool, a tool that sends
// a notifications/message to the caller's session (it travels on the
// session's GET stream), a tool that asks the client for a sampling round
// trip during the call (it travels on the call's own response), one that
// asks for it on the session's GET stream instead, and the tools of the
// 2026-07-28 tests (addModernTools). It declares tools and prompts
// listChanged, so listen streams can ask for both.
func newMCPServer() *server.MCPServer {
	s := server.NewMCPServer("lifeline-interop", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
	)
	s.EnableSampling()
	addModernTools(s)
	s.AddTool(mcp.NewTool(toolEcho,
		mcp.WithDescription("Returns the text it is given."),
		mcp.WithString("text", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	s.AddTool(mcp.NewTool(toolNotify,
		mcp.WithDescription("Sends one notifications/message carrying text to the caller's session (its GET stream)."),
		mcp.WithString("text", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		session := server.ClientSessionFromContext(ctx)
		if session == nil {
			return mcp.NewToolResultError("no session"), nil
		}
		err = s.SendNotificationToSpecificClient(session.SessionID(), "notifications/message", map[string]any{
			"level":  "info",
			"logger": "interop",
			"data":   map[string]any{"text": text},
		})
		if err != nil {
			return mcp.NewToolResultError("notify: " + err.Error()), nil
		}
		return mcp.NewToolResultText("notified"), nil
	})
	s.AddTool(mcp.NewTool(toolSample,
		mcp.WithDescription("Asks the client to sample a reply to prompt and returns what it answered."),
		mcp.WithString("prompt", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return sample(ctx, s, req)
	})
	s.AddTool(mcp.NewTool(toolSampleOnStream,
		mcp.WithDescription("Like interop_sample, but the request goes out on the session's GET stream."),
		mcp.WithString("prompt", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return sample(streamable.OnSessionStream(ctx, s), s, req)
	})
	return s
}

// sample asks the client of ctx's session for a sampling round trip on the
// prompt argument and returns what it answered as
// "model=M role=R text=T".
func sample(ctx context.Context, s *server.MCPServer, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	prompt, err := req.RequireString("prompt")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
		MaxTokens: 16,
	}})
	if err != nil {
		return mcp.NewToolResultError("sampling: " + err.Error()), nil
	}
	text := mcp.GetTextFromContent(res.Content)
	return mcp.NewToolResultText(fmt.Sprintf("model=%s role=%s text=%s", res.Model, res.Role, text)), nil
}

// harness is the server under test: lifeline's transport on a loopback
// httptest server, with every HTTP exchange recorded.
type harness struct {
	URL string
	H   *streamable.Handler
	// S is the MCP server behind H: tests change its tools and broadcast
	// through it.
	S    *server.MCPServer
	Wire *wire
	// HTTP is the httptest server's client; clients use it so that closing
	// the server also closes their idle connections.
	HTTP *http.Client
	// Log collects the transport's and the Go SDK client's logs; it is
	// printed when a test fails.
	Log *lockedBuffer
}

// start serves a fresh server under test with cfg until the test ends.
func start(t *testing.T, cfg streamable.Config) *harness {
	t.Helper()
	return startServer(t, cfg, newMCPServer())
}

// startServer serves s through lifeline's transport with cfg until the
// test ends.
func startServer(t *testing.T, cfg streamable.Config, s *server.MCPServer) *harness {
	t.Helper()
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("src", "lifeline")
	h := streamable.New(s, cfg)
	w := &wire{next: h}
	srv := httptest.NewServer(w) // 127.0.0.1
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("transport shutdown: %v", err)
		}
	})
	return &harness{URL: srv.URL + "/mcp", H: h, S: s, Wire: w, HTTP: srv.Client(), Log: logs}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// exchange is one HTTP request the server got and what it answered.
type exchange struct {
	Seq       int
	Method    string // HTTP method
	SessionID string // Mcp-Session-Id sent
	Version   string // MCP-Protocol-Version sent
	// LastEventID is the Last-Event-ID header sent (a resuming GET).
	LastEventID string
	RPC         string // JSON-RPC method POSTed, or "response" for a POSTed response
	RPCID       string // JSON-RPC id POSTed
	Request     string // the POSTed body
	Status      int    // 0 until the answer's header is written
	// AnsweredSessionID is the Mcp-Session-Id header of the answer.
	AnsweredSessionID string
	Body              string // what was written in answer so far (capped)
}

func (e exchange) String() string {
	s := fmt.Sprintf("#%d %s", e.Seq, e.Method)
	if e.RPC != "" {
		s += " " + e.RPC
		if e.RPCID != "" {
			s += " id=" + e.RPCID
		}
	}
	sid := e.SessionID
	if len(sid) > 8 {
		sid = sid[:8]
	}
	if e.LastEventID != "" {
		s += fmt.Sprintf(" last-event-id=%q", e.LastEventID)
	}
	return s + fmt.Sprintf(" session=%q version=%q -> %d", sid, e.Version, e.Status)
}

// maxRecordedBody caps what is kept of each answer: a listen stream that
// carries a burst of 1,000 notifications fits.
const maxRecordedBody = 1 << 20

// wire records every exchange with the handler it wraps, without changing
// what the handler sees: bodies are passed on whole, and flushes, write
// deadlines and their errors go through to the real ResponseWriter.
type wire struct {
	next http.Handler
	// clock, when set, numbers the exchanges (Seq) across several wires
	// that share it, so that a cluster's exchanges can be put in order.
	clock *atomic.Int64
	mu    sync.Mutex
	log   []*exchange
}

func (w *wire) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	ex := &exchange{Method: r.Method, SessionID: r.Header.Get("Mcp-Session-Id"),
		Version: r.Header.Get("Mcp-Protocol-Version"), LastEventID: r.Header.Get("Last-Event-ID")}
	if r.Method == http.MethodPost && r.Body != nil {
		head, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		ex.Request = string(head)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(head, &m) == nil {
			ex.RPC, ex.RPCID = m.Method, string(m.ID)
			if ex.RPC == "" {
				ex.RPC = "response"
			}
		}
	}
	w.mu.Lock()
	ex.Seq = len(w.log) + 1
	if w.clock != nil {
		ex.Seq = int(w.clock.Add(1))
	}
	w.log = append(w.log, ex)
	w.mu.Unlock()
	rec := &recordingWriter{ResponseWriter: rw, w: w, ex: ex}
	w.next.ServeHTTP(rec, r)
	rec.status(http.StatusOK) // a handler that wrote nothing answered 200
}

// exchanges returns a copy of what was recorded so far.
func (w *wire) exchanges() []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]exchange, len(w.log))
	for i, ex := range w.log {
		out[i] = *ex
	}
	return out
}

// find returns the recorded exchanges that match keep.
func (w *wire) find(keep func(exchange) bool) []exchange {
	var out []exchange
	for _, ex := range w.exchanges() {
		if keep(ex) {
			out = append(out, ex)
		}
	}
	return out
}

// dump formats the exchanges of one session (all when sid is empty).
func (w *wire) dump(sid string) string {
	var b strings.Builder
	for _, ex := range w.exchanges() {
		if sid == "" || ex.SessionID == sid || ex.SessionID == "" {
			fmt.Fprintln(&b, ex)
		}
	}
	return b.String()
}

type recordingWriter struct {
	http.ResponseWriter
	w  *wire
	ex *exchange
}

func (rw *recordingWriter) status(code int) {
	rw.w.mu.Lock()
	if rw.ex.Status == 0 {
		rw.ex.Status = code
		rw.ex.AnsweredSessionID = rw.ResponseWriter.Header().Get("Mcp-Session-Id")
	}
	rw.w.mu.Unlock()
}

func (rw *recordingWriter) WriteHeader(code int) {
	rw.status(code)
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recordingWriter) Write(p []byte) (int, error) {
	rw.status(http.StatusOK)
	rw.w.mu.Lock()
	if room := maxRecordedBody - len(rw.ex.Body); room > 0 {
		rw.ex.Body += string(p[:min(len(p), room)])
	}
	rw.w.mu.Unlock()
	return rw.ResponseWriter.Write(p)
}

// FlushError lets http.ResponseController flush through the recorder and
// still see the real flush's error.
func (rw *recordingWriter) FlushError() error {
	return http.NewResponseController(rw.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the real writer (write deadlines).
func (rw *recordingWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// logger writes to the harness's log, tagged with src.
func logger(h *harness, src string) *slog.Logger {
	return slog.New(slog.NewTextHandler(h.Log, &slog.HandlerOptions{Level: slog.LevelDebug})).With("src", src)
}
