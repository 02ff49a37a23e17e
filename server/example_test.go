package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// An mcp-go server served through lifeline as an http.Handler: build the
// MCPServer as usual, wrap it with New, mount it, and Shutdown when done.
func ExampleNew() {
	mcpServer := mcpserver.NewMCPServer("example", "1.0.0", mcpserver.WithToolCapabilities(true))
	mcpServer.AddTool(mcp.NewTool("greet",
		mcp.WithString("name", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello, " + req.GetString("name", "")), nil
	})

	srv := server.New(mcpServer,
		server.WithHeartbeatInterval(20*time.Second),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)),
	)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		fmt.Println("shutdown:", srv.Shutdown(ctx))
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println("initialize:", err)
		return
	}
	fmt.Println("initialized, session id set:", c.SessionID != "")

	resp, err := c.CallTool(ctx, "greet", map[string]any{"name": "lifeline"})
	if err != nil {
		fmt.Println("call:", err)
		return
	}
	last, _ := resp.Last()
	fmt.Println("tools/call status:", resp.Status)
	fmt.Println("result:", string(last.Result))

	del, err := c.Delete(ctx)
	if err != nil {
		fmt.Println("delete:", err)
		return
	}
	fmt.Println("DELETE status:", del.Status)
	again, err := c.CallTool(ctx, "greet", map[string]any{"name": "again"})
	if err != nil {
		fmt.Println("call:", err)
		return
	}
	fmt.Println("after DELETE status:", again.Status)

	// Output:
	// initialized, session id set: true
	// tools/call status: 200
	// result: {"content":[{"type":"text","text":"hello, lifeline"}]}
	// DELETE status: 200
	// after DELETE status: 404
	// shutdown: <nil>
}
