package streamable_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A notification handler that panics inside a batch is recovered: the
// batch is answered and its stream released.
func TestPanickingNotificationInABatchIsRecovered(t *testing.T) {
	var mcpSrv *server.MCPServer
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		mcpSrv = s
		s.AddTool(mcp.NewTool("speak"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = mcpSrv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "hi"})
			return mcp.NewToolResultText("spoke"), nil
		})
		s.AddNotificationHandler("notifications/boom", func(context.Context, mcp.JSONRPCNotification) { panic("boom") })
	})
	c := session20250326(t, r)
	_, err := c.PostRaw(testutil.Context(t, wait), []byte(`[`+
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"speak","arguments":{}}},`+
		`{"jsonrpc":"2.0","method":"notifications/boom"}]`))
	t.Logf("batch: %v", err)
	// The handler has returned (the panic reached net/http) once the
	// client has its (cut) answer; nothing more is to run.
	testutil.Eventually(t, wait, "the batch's stream to be released", func() bool {
		return r.h.Stats().PostStreams == 0
	})
}
