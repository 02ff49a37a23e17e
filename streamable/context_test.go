package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

type tenantKey struct{}

func TestContextFuncAndRequestHeaderReachTools(t *testing.T) {
	var unregisteredTenant string
	cfg := streamable.Config{ContextFunc: func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, tenantKey{}, r.Header.Get("X-Tenant"))
	}}
	r := newRig(t, cfg, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tenant, _ := ctx.Value(tenantKey{}).(string)
			return mcp.NewToolResultText(tenant + "/" + streamable.RequestHeader(ctx).Get("X-Trace")), nil
		})
		hooks := &server.Hooks{}
		hooks.AddOnUnregisterSession(func(ctx context.Context, _ server.ClientSession) {
			unregisteredTenant, _ = ctx.Value(tenantKey{}).(string)
		})
		server.WithHooks(hooks)(s)
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	req, err := c.NewRequest(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Tenant", "acme")
	req.Header.Set("X-Trace", "t-1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), "acme/t-1") {
		t.Fatalf("tool saw %s, want tenant acme and header t-1", last.Result)
	}
	del, err := c.NewRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("X-Tenant", "acme")
	if resp, err := c.Do(del); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
	if unregisteredTenant != "acme" {
		t.Fatalf("unregister hook saw tenant %q, want the ContextFunc's value on DELETE too", unregisteredTenant)
	}
}

func TestRequestHeaderOutsideARequestIsNil(t *testing.T) {
	if streamable.RequestHeader(context.Background()) != nil {
		t.Fatal("RequestHeader of a bare context is not nil")
	}
}

func TestDisableStreamingAnswersGetWith405(t *testing.T) {
	r := newRig(t, streamable.Config{DisableStreaming: true})
	c := r.session()
	s, err := c.OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "GET", s.Status, http.StatusMethodNotAllowed, s.Body, "no standalone GET stream")
	// Request-scoped notifications still stream on the POST.
	resp, err := c.Call(testutil.Context(t, wait), "tools/call", map[string]any{
		"name": "lifeline_progress", "arguments": map[string]any{"steps": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Messages) != 3 {
		t.Fatalf("%d messages on the POST, want 2 logs and the response", len(resp.Messages))
	}
}
