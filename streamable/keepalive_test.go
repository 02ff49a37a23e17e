package streamable_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// gatedTool adds a tool "gated" that returns when gate is closed or its
// request is cancelled.
func gatedTool(gate <-chan struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("gated"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-gate:
				return mcp.NewToolResultText("released"), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	}
}

// callGated starts a call of the "gated" tool and returns its answer as a
// stream, closed when the test ends.
func callGated(t *testing.T, ctx context.Context, c *testutil.Client) *testutil.Stream {
	t.Helper()
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "gated"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	return call
}

func TestLongPostGetsKeepAliveComments(t *testing.T) {
	gate := make(chan struct{})
	r := newRig(t, streamable.Config{}, gatedTool(gate))
	c := r.session()
	ctx := testutil.Context(t, wait)
	call := callGated(t, ctx, c)
	if call.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("a call outlasting the heartbeat was not upgraded to SSE: %q", call.Header.Get("Content-Type"))
	}
	ev, err := call.Next(ctx)
	if err != nil || (ev.Comment != "stream open" && !ev.IsPriming()) {
		t.Fatalf("first item %+v (%v), want the opening comment or priming event", ev, err)
	}
	for range 3 {
		ev, err := call.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Comment != "keepalive" {
			t.Fatalf("got %+v, want a keepalive comment", ev)
		}
	}
	close(gate)
	m, err := call.NextMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != "1" || m.Result == nil {
		t.Fatalf("response %+v", m)
	}
}

func TestShortPostStaysJSON(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled})
	c := r.session()
	resp, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.IsSSE() || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("a quick call without notifications was not plain JSON: %q", resp.Header.Get("Content-Type"))
	}
}
