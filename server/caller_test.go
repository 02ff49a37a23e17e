package server_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The caller options reach the transport: sessions are bound to the caller
// WithCallerIdentity names, and WithMaxSessionsPerCaller bounds them.
func TestCallerOptions(t *testing.T) {
	srv := newServer(t,
		server.WithCallerIdentity(func(r *http.Request) (string, error) { return r.Header.Get("X-Caller"), nil }),
		server.WithMaxSessions(10),
		server.WithMaxSessionsPerCaller(1),
		server.WithMaxRequestsPerSession(4),
	)
	base, _ := serve(t, srv)
	ctx := testutil.Context(t, wait)
	alice := rawClient(t, base+"/mcp")
	alice.Header = map[string]string{"X-Caller": "alice"}
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	bob := rawClient(t, base+"/mcp")
	bob.SessionID, bob.ProtocolVersion = alice.SessionID, alice.ProtocolVersion
	bob.Header = map[string]string{"X-Caller": "bob"}
	resp, err := bob.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusForbidden {
		t.Fatalf("bob on alice's session: status %d (%s), want 403", resp.Status, resp.Body)
	}
	again := rawClient(t, base+"/mcp")
	again.Header = alice.Header
	resp, err = again.Call(ctx, "initialize", map[string]any{"protocolVersion": testutil.ProtocolVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusTooManyRequests {
		t.Fatalf("alice's second session: status %d (%s), want 429", resp.Status, resp.Body)
	}
}
