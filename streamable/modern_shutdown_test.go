package streamable_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Shutdown lets a running 2026-07-28 request finish within its grace, as
// it does for requests of the earlier versions.
func TestShutdownLetsARunningModernRequestFinish(t *testing.T) {
	started := make(chan struct{}, 1)
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("slow_modern"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond) // a short job that does not watch ctx
			return mcp.NewToolResultText("finished"), nil
		})
	})
	c := r.mcpgoClient(nil)
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		call := mcp.CallToolRequest{}
		call.Params.Name = "slow_modern"
		_, err := c.CallTool(ctx, call)
		res <- err
	}()
	<-started
	down := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		down <- r.h.Shutdown(sctx)
	}()
	if err := <-res; err != nil {
		t.Fatalf("a 2026-07-28 tools/call running when Shutdown (5 s ctx) began: %v", err)
	}
	if err := <-down; err != nil {
		t.Fatal(err)
	}
}
