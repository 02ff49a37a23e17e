package streamable_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Mount the transport as an http.Handler and talk to it as a client would.
func ExampleNew() {
	mcpServer := server.NewMCPServer("example", "1.0.0", server.WithToolCapabilities(true))
	mcpServer.AddTool(mcp.NewTool("greet"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello"), nil
	})
	h := streamable.New(mcpServer, streamable.Config{
		HeartbeatInterval: 5 * time.Second,
		IdleTTL:           10 * time.Minute,
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Shutdown(context.Background())

	ctx := context.Background()
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	resp, _ := c.CallTool(ctx, "greet", nil)
	fmt.Println("tools/call:", resp.Status)
	del, _ := c.Delete(ctx)
	fmt.Println("DELETE:", del.Status)
	again, _ := c.CallTool(ctx, "greet", nil)
	fmt.Println("after DELETE:", again.Status)
	// Output:
	// tools/call: 200
	// DELETE: 200
	// after DELETE: 404
}
