package lifelineclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// The one-line swap: lifelineclient.NewStreamableHTTP in place of
// transport.NewStreamableHTTP. When the server forgets the session (here
// a DELETE of someone else's; in life a restart, a Redis flush or an idle
// expiry), the next call starts a new session and goes on.
func Example() {
	s := server.NewMCPServer("example", "1")
	s.AddTool(mcp.NewTool("hello"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello"), nil
	})
	h := streamable.New(s, streamable.Config{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Shutdown(context.Background())
	ctx := context.Background()

	t, err := lifelineclient.Config{
		OnSessionReplaced: func(oldID, newID string) { fmt.Println("new session:", oldID != newID) },
	}.NewStreamableHTTP(ts.URL) // was: transport.NewStreamableHTTP(ts.URL)
	if err != nil {
		panic(err)
	}
	c := client.NewClient(t, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		panic(err)
	}

	// The server forgets the session.
	del, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	del.Header.Set("Mcp-Session-Id", c.GetSessionId())
	if resp, err := http.DefaultClient.Do(del); err == nil {
		resp.Body.Close()
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "hello"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// new session: true
	// hello
}
