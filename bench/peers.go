package bench

import (
	"bytes"
	"context"
	"encoding/json"

	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// Names of the peers, in report order.
const (
	Lifeline = "lifeline"
	MCPGo    = "mcp-go"
	GoSDK    = "go-sdk"
	Floor    = "floor"
	Plain    = "plain"
)

// Names of the tools every peer serves.
const (
	ToolEcho     = "echo"           // returns its text
	ToolProgress = "bench_progress" // 3 progress notifications on the call's own response, then a result
	ToolNotify   = "bench_notify"   // one notifications/message to the session (its GET stream)
	ToolFlood    = "bench_flood"    // count notifications/message of size bytes to the session
)

// Options are the settings every peer gets alike.
type Options struct {
	// Heartbeat is the heartbeat interval: lifeline's ping, stock mcp-go's
	// WithHeartbeatInterval, the Go SDK's ServerOptions.KeepAlive.
	Heartbeat time.Duration
	// WriteTimeout is lifeline's stream write deadline (the others have none).
	WriteTimeout time.Duration
	// DisableEventLog turns lifeline's resumability off
	// (streamable.Config.DisableEventLog): no event ids, nothing recorded.
	DisableEventLog bool
	// MeterProvider and TracerProvider, when set, are lifeline's
	// (streamable.Config): the cost of telemetry (cmd/otelcost). Nil: the
	// globals, with nothing installed. The floor, given either, emits the
	// least telemetry the MCP conventions ask for (telemetryFloor).
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// FloorHeaderChecks has the floor run, on a 2026-07-28 request, the
	// header checks MCPServer runs when mcp-go's own transport hands it the
	// headers (floor_checks.go); the other peers ignore it.
	FloorHeaderChecks bool
	// FloorSession has the floor give each 2026-07-28 request the least
	// session MCPServer takes (floor_session.go); the other peers ignore it.
	FloorSession bool
	// Redis, when set, puts lifeline's sessions (and, by default, its
	// event log) in a Store of its own on that redis-server; the peer's
	// Close closes the Store. Nil: the process-local memory store.
	Redis *RedisBackend
}

// Peer is one server under test, on its own http.Server and port.
type Peer struct {
	Name string
	// URL is the endpoint. JSONURL is where tools/call is answered as JSON
	// (the Go SDK answers JSON only on a handler with JSONResponse set, so
	// it has a second one; for the others it is URL).
	URL, JSONURL string
	// Sessions is false for the plain handler and the floor: no session,
	// GET stream, DELETE or notifications.
	Sessions bool
	// JSONOnly is true for the floor: it answers tools/call as JSON only
	// (no SSE, no GET stream), so only its JSON throughput is measured.
	JSONOnly bool
	// Handler is lifeline's transport (nil for the others), for Stats.
	Handler *streamable.Handler
	// Modern makes the measurements speak sessionless 2026-07-28 to the
	// peer (lifeline and stock mcp-go serve both eras on one endpoint).
	Modern bool
	// modernURL and modernJSONURL, when set, are where the peer serves
	// 2026-07-28 instead of URL and JSONURL: the Go SDK answers it only on
	// a handler with Stateless set.
	modernURL, modernJSONURL string

	srv   *http.Server
	close func()
}

// InEra returns a Peer for the same server whose measurements speak
// 2026-07-28 when modern is set, the session era otherwise. Closing either
// closes the server.
func (p *Peer) InEra(modern bool) *Peer {
	q := *p
	q.Modern = modern
	if modern && q.modernURL != "" {
		q.URL, q.JSONURL = q.modernURL, q.modernJSONURL
	}
	return &q
}

// Close stops the peer's http.Server (closing its connections) and the
// transport.
func (p *Peer) Close() {
	_ = p.srv.Close()
	if p.close != nil {
		p.close()
	}
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func serve(name, path string, h http.Handler, extra map[string]http.Handler) (*Peer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	for p, eh := range extra {
		mux.Handle(p, eh)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slogDiscardLog()}
	go func() { _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + path
	return &Peer{Name: name, URL: url, JSONURL: url, Sessions: true, srv: srv}, nil
}

// StartPeer starts the named peer.
func StartPeer(name string, o Options) (*Peer, error) {
	switch name {
	case Lifeline:
		var store sessionstore.Store
		closeStore := func() {}
		if o.Redis != nil {
			rs := o.Redis.newStore()
			store, closeStore = rs, func() { _ = rs.Close() }
		}
		h := streamable.New(newMCPGoServer(), streamable.Config{
			Store:             store,
			HeartbeatInterval: o.Heartbeat,
			WriteTimeout:      o.WriteTimeout,
			Logger:            discard,
			MaxSessions:       20000,
			DisableEventLog:   o.DisableEventLog,
			MeterProvider:     o.MeterProvider,
			TracerProvider:    o.TracerProvider,
		})
		p, err := serve(name, "/mcp", h, nil)
		if err != nil {
			_ = h.Close()
			closeStore()
			return nil, err
		}
		p.Handler = h
		p.close = func() { _ = h.Close(); closeStore() }
		return p, nil
	case MCPGo:
		h := server.NewStreamableHTTPServer(newMCPGoServer(),
			server.WithHeartbeatInterval(o.Heartbeat),
			server.WithStateful(true),
		)
		p, err := serve(name, "/mcp", h, nil)
		if err != nil {
			return nil, err
		}
		p.close = func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = h.Shutdown(ctx)
		}
		return p, nil
	case GoSDK:
		s := newGoSDKServer(o)
		sse := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
			&sdk.StreamableHTTPOptions{Logger: discard})
		js := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
			&sdk.StreamableHTTPOptions{Logger: discard, JSONResponse: true})
		// The SDK serves 2026-07-28 only when stateless; the same server
		// behind two stateless handlers answers it (SSE and JSON).
		modernSSE := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
			&sdk.StreamableHTTPOptions{Logger: discard, Stateless: true})
		modernJSON := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
			&sdk.StreamableHTTPOptions{Logger: discard, Stateless: true, JSONResponse: true})
		p, err := serve(name, "/mcp", sse, map[string]http.Handler{"/mcp-json": js, "/mcp-2026": modernSSE, "/mcp-2026-json": modernJSON})
		if err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(p.URL, "/mcp")
		p.JSONURL, p.modernURL, p.modernJSONURL = base+"/mcp-json", base+"/mcp-2026", base+"/mcp-2026-json"
		return p, nil
	case Floor:
		f := floorHandler{s: newMCPGoServer(), headerChecks: o.FloorHeaderChecks}
		if o.FloorSession {
			f.sessions = &floorSessions{}
		}
		var h http.Handler = f
		if o.MeterProvider != nil || o.TracerProvider != nil {
			h = telemetryFloor(h, o.MeterProvider, o.TracerProvider)
		}
		p, err := serve(name, "/mcp", h, nil)
		if err != nil {
			return nil, err
		}
		p.Sessions, p.JSONOnly = false, true
		return p, nil
	case Plain:
		p, err := serve(name, "/mcp", plainHandler{}, nil)
		if err != nil {
			return nil, err
		}
		p.Sessions = false
		return p, nil
	}
	return nil, fmt.Errorf("unknown peer %q", name)
}

// newMCPGoServer is the MCPServer lifeline and stock mcp-go serve.
func newMCPGoServer() *server.MCPServer {
	s := server.NewMCPServer("bench", "1.0.0", server.WithToolCapabilities(true), server.WithLogging())
	s.AddTool(mcp.NewTool(ToolEcho, mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool(ToolProgress),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= 3 && token != nil; i++ {
				_ = s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": i, "total": 3,
				})
			}
			return mcp.NewToolResultText("done"), nil
		})
	s.AddTool(mcp.NewTool(ToolNotify),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs := server.ClientSessionFromContext(ctx)
			if cs == nil {
				return mcp.NewToolResultError("no session"), nil
			}
			_ = s.SendNotificationToSpecificClient(cs.SessionID(), "notifications/message",
				map[string]any{"level": "info", "logger": "bench", "data": "tick"})
			return mcp.NewToolResultText("sent"), nil
		})
	s.AddTool(mcp.NewTool(ToolFlood, mcp.WithNumber("count"), mcp.WithNumber("size")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs := server.ClientSessionFromContext(ctx)
			if cs == nil {
				return mcp.NewToolResultError("no session"), nil
			}
			data := strings.Repeat("x", req.GetInt("size", 1024))
			for range req.GetInt("count", 1) {
				if ctx.Err() != nil {
					break
				}
				_ = s.SendNotificationToSpecificClient(cs.SessionID(), "notifications/message",
					map[string]any{"level": "info", "logger": "bench", "data": data})
			}
			return mcp.NewToolResultText("sent"), nil
		})
	return s
}

type echoIn struct {
	Text string `json:"text"`
}

type floodIn struct {
	Count int `json:"count"`
	Size  int `json:"size"`
}

// newGoSDKServer serves the same tools with the official Go SDK. Its
// heartbeat (KeepAlive) is a ping request per session; the failure threshold
// is raised so that bench clients, which never answer, are not dropped.
func newGoSDKServer(o Options) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1.0.0"}, &sdk.ServerOptions{
		Logger:                    discard,
		KeepAlive:                 o.Heartbeat,
		KeepAliveFailureThreshold: math.MaxInt32,
	})
	text := func(t string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: t}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: ToolEcho}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return text(in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: ToolProgress}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 3; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3})
			}
		}
		return text("done"), nil, nil
	})
	// Log with a context unrelated to the request goes on the GET stream
	// (the client sets the level with logging/setLevel first).
	sdk.AddTool(s, &sdk.Tool{Name: ToolNotify}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		_ = req.Session.Log(context.Background(), &sdk.LoggingMessageParams{Level: "info", Logger: "bench", Data: "tick"})
		return text("sent"), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: ToolFlood}, func(ctx context.Context, req *sdk.CallToolRequest, in floodIn) (*sdk.CallToolResult, any, error) {
		data := strings.Repeat("x", max(in.Size, 1))
		for range max(in.Count, 1) {
			if ctx.Err() != nil {
				break
			}
			_ = req.Session.Log(context.Background(), &sdk.LoggingMessageParams{Level: "info", Logger: "bench", Data: data})
		}
		return text("sent"), nil, nil
	})
	return s
}

// plainHandler is the physical limit: it decodes the request's id and
// answers with a fixed response (a fixed SSE body with three progress
// notifications for the progress tool); a GET gets an SSE stream that stays
// silent until the client goes. It has no sessions.
type plainHandler struct{}

var (
	plainEcho     = []byte(`,"result":{"content":[{"type":"text","text":"x"}]}}`)
	plainInit     = []byte(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"plain","version":"1"}}}`)
	plainProgress = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":%d,\"total\":3}}\n\n"
)

func (plainHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, ": open\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(msg.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	res := plainEcho
	if msg.Method == "initialize" {
		res = plainInit
	}
	if bytes.Contains(body, []byte(ToolProgress)) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			_, _ = fmt.Fprintf(w, plainProgress, i)
		}
		_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s%s\n\n", msg.ID, res)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out := make([]byte, 0, 128)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, msg.ID...)
	out = append(out, res...)
	_, _ = w.Write(out)
}

// floorSessionID is the Mcp-Session-Id the floor sets on every response, so
// that a bench client's Initialize gets a session id to send.
const floorSessionID = "floor"

// floorHandler is the floor: stock mcp-go's MCPServer (the same
// newMCPGoServer lifeline and stock mcp-go serve) behind the least HTTP
// handling possible. A POST's body goes to HandleMessage as it is and the
// result is written as JSON (202 without a body for a notification); every
// other method gets 405. It has no sessions, validation, heartbeats or
// streams: it is the most any transport built on mcp-go's MCPServer can reach
// in this harness, the same MCPServer work without any transport work. It is
// not a usable transport.
//
// With headerChecks it also runs, on a 2026-07-28 request, the header
// checks MCPServer runs for mcp-go's own transport (floorHeaderChecks);
// with sessions it gives each 2026-07-28 request a session of its own
// (floor_session.go).
type floorHandler struct {
	s            *server.MCPServer
	headerChecks bool
	sessions     *floorSessions
}

// ServeHTTP answers one request as the floorHandler doc says.
func (f floorHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Mcp-Session-Id", floorSessionID)
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if f.headerChecks && floorHeaderChecks(w, r, f.s, body) {
		return
	}
	ctx := r.Context()
	if f.sessions != nil {
		ctx = f.sessions.withSession(ctx, f.s, r)
	}
	res := f.s.HandleMessage(ctx, body)
	if res == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := json.Marshal(res)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
