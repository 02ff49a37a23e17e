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
