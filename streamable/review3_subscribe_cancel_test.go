package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// review-3: SubscribeToResourceErr checks templates by running
// resources/templates/list through MCPServer.HandleMessage on the session
// with JSON-RPC id 1. mcp-go keys its in-flight cancellation by session id
// and request id, so that nested call overwrites, then deletes, the entry
// of the client's own request with id 1 on the same session: after a
// resources/subscribe to a templated URI, the client's
// notifications/cancelled for its request 1 no longer cancels it.
func TestReview3SubscribeBreaksCancellationOfTheClientsRequest1(t *testing.T) {
	for _, subscribeFirst := range []bool{false, true} {
		name := "control"
		if subscribeFirst {
			name = "after-subscribe"
		}
		t.Run(name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
				server.WithResourceCapabilities(true, true)(s)
				s.AddResourceTemplate(mcp.NewResourceTemplate("test://item/{id}", "item"),
					func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
				s.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					started <- struct{}{}
					<-ctx.Done()
					return mcp.NewToolResultText("cancelled"), nil
				})
			})
			c := r.session()
			ctx := testutil.Context(t, wait)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = c.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`))
			}()
			<-started
			if subscribeFirst {
				resp, err := c.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://item/7"}}`))
				if err != nil || resp.Status != http.StatusOK || strings.Contains(string(resp.Body), `"error"`) {
					t.Fatalf("subscribe: %v %v %s", resp, err, resp.Body)
				}
			}
			ack, err := c.Notify(ctx, "notifications/cancelled", map[string]any{"requestId": 1, "reason": "user"})
			if err != nil || ack.Status != http.StatusAccepted {
				t.Fatalf("cancel: %v %v", ack, err)
			}
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Fatal("3 s after notifications/cancelled for request 1, the request still runs")
			}
		})
	}
}
