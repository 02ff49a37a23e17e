package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// tenantResolver picks a session id manager by the request's X-Tenant
// header; without one, it resolves none (nil: the default ids).
type tenantResolver struct{}

func (tenantResolver) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	if r == nil || r.Header.Get("X-Tenant") == "" {
		return nil
	}
	return prefixIDs(r.Header.Get("X-Tenant"))
}

type prefixIDs string

func (p prefixIDs) Generate() string             { return string(p) + "-session" }
func (prefixIDs) Validate(string) (bool, error)  { return false, nil }
func (prefixIDs) Terminate(string) (bool, error) { return false, nil }

// TestWithSessionIdManagerResolver: each initialize takes its id from the
// manager resolved for its own request; a nil manager means the default
// ids, a nil resolver is ignored, and of it and WithSessionIdManager the
// last given wins.
func TestWithSessionIdManagerResolver(t *testing.T) {
	ctx := testutil.Context(t, wait)
	srv := newServer(t, server.WithSessionIdManager(fixedIDs{}), server.WithSessionIdManagerResolver(tenantResolver{}),
		server.WithSessionIdManagerResolver(nil))
	base, _ := serve(t, srv)
	for tenant, want := range map[string]string{"acme": "acme-session", "globex": "globex-session"} {
		c := rawClient(t, base+"/mcp")
		c.Header = map[string]string{"X-Tenant": tenant}
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		if c.SessionID != want {
			t.Errorf("tenant %s: session id %q, want %q", tenant, c.SessionID, want)
		}
		if resp, err := c.Call(ctx, "tools/list", nil); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("tools/list on %s: %v %+v", c.SessionID, err, resp)
		}
	}
	c := rawClient(t, base+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.SessionID) != 36 { // a UUID
		t.Errorf("no tenant: session id %q, want a default one", c.SessionID)
	}

	// WithSessionIdManager after the resolver wins.
	srv2 := newServer(t, server.WithSessionIdManagerResolver(tenantResolver{}), server.WithSessionIdManager(fixedIDs{}))
	base2, _ := serve(t, srv2)
	c2 := rawClient(t, base2+"/mcp")
	c2.Header = map[string]string{"X-Tenant": "acme"}
	if _, err := c2.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if c2.SessionID != "fixed-session-id" {
		t.Errorf("WithSessionIdManager after the resolver: id %q", c2.SessionID)
	}
}

// TestWithStreamableHTTPProtocolVersions: the option reaches the transport
// (initialize negotiated down, SupportsProtocolVersion), and passing none
// restores the default.
func TestWithStreamableHTTPProtocolVersions(t *testing.T) {
	ctx := testutil.Context(t, wait)
	srv := newServer(t, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20250618))
	var _ mcpserver.ProtocolVersionSupporter = srv
	if srv.SupportsProtocolVersion(mcp.ProtocolVersion20251125) || !srv.SupportsProtocolVersion(mcp.ProtocolVersion20250618) {
		t.Error("SupportsProtocolVersion does not follow the option")
	}
	base, _ := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	resp, err := c.Call(ctx, "initialize", map[string]any{"protocolVersion": mcp.ProtocolVersion20251125,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || res.ProtocolVersion != mcp.ProtocolVersion20250618 {
		t.Errorf("initialize answered %q (%v), want 2025-06-18", res.ProtocolVersion, err)
	}

	all := newServer(t, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20250618),
		server.WithStreamableHTTPProtocolVersions())
	for _, v := range mcp.ValidProtocolVersions {
		if !all.SupportsProtocolVersion(v) {
			t.Errorf("after passing none, %s is not served", v)
		}
	}
}

// bufferedWriter is a framework's response writer that cannot stream.
type bufferedWriter struct {
	header http.Header
	status int
	body   []byte
}

func (w *bufferedWriter) Header() http.Header { return w.header }
func (w *bufferedWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *bufferedWriter) Flush()          {}
func (w *bufferedWriter) CanStream() bool { return false }

// TestServerHandle: Server.Handle serves mcp-go's transport-agnostic
// request form (initialize answered, GET 405 on a writer that cannot
// stream), and CloseSessions ends the session it made.
func TestServerHandle(t *testing.T) {
	ctx := testutil.Context(t, wait)
	srv := newServer(t)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "t", "version": "1"}}})
	hdr := http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"}}
	w := &bufferedWriter{header: make(http.Header)}
	srv.Handle(w, &mcpserver.HTTPRequest{Method: http.MethodPost, Header: hdr, Body: body, Context: ctx})
	id := w.header.Get("Mcp-Session-Id")
	if w.status != http.StatusOK || id == "" {
		t.Fatalf("initialize through Handle: %d %q", w.status, w.body)
	}
	g := &bufferedWriter{header: make(http.Header)}
	srv.Handle(g, &mcpserver.HTTPRequest{Method: http.MethodGet, Context: ctx,
		Header: http.Header{"Accept": {"text/event-stream"}, "Mcp-Session-Id": {id}}})
	if g.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET through Handle on a buffered writer: %d %q", g.status, g.body)
	}
	if srv.Handler().Stats().Sessions != 1 {
		t.Fatal("no session after initialize through Handle")
	}
	srv.CloseSessions(ctx)
	if n := srv.Handler().Stats().Sessions; n != 0 {
		t.Fatalf("CloseSessions left %d sessions", n)
	}
}
