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

// resources/subscribe's template check runs a request through the
// MCPServer under an id no client uses, so a client's own request 1 can
// still be cancelled.
func TestSubscribeKeepsCancellationOfTheClientsRequest1(t *testing.T) {
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
