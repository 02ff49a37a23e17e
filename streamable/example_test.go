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

// A tool that sends a notification unrelated to the call it runs in: with
// OnSessionStream it goes on the session's GET stream (on whichever replica
// holds it) instead of on the call's own response.
func ExampleOnSessionStream() {
	mcpServer := server.NewMCPServer("example", "1.0.0", server.WithToolCapabilities(true))
	mcpServer.AddTool(mcp.NewTool("start_job"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		onStream := streamable.OnSessionStream(ctx, mcpServer)
		err := mcpServer.SendNotificationToClient(onStream, "notifications/message",
			map[string]any{"level": "info", "data": "job queued"})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("started"), nil
	})
	h := streamable.New(mcpServer, streamable.Config{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(ctx); err != nil {
		fmt.Println(err)
		return
	}
	stream, err := c.OpenStream(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	resp, _ := c.CallTool(ctx, "start_job", nil)
	fmt.Println("tools/call:", resp.Status, "messages on its response:", len(resp.Messages))
	m, err := stream.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("on the GET stream:", m.Method)
	// Output:
	// tools/call: 200 messages on its response: 1
	// on the GET stream: notifications/message
}
