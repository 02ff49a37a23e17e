package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A batch whose stream is first made after its session's termination gave
// up waiting (the stream is closed before it begins) answers its JSON array
// instead: the answers that existed are not lost.
func TestBatchStreamMadeAfterInterruptAnswersItsArray(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var mcpSrv *server.MCPServer
	r := newRig(t, streamable.Config{CleanupTimeout: 200 * time.Millisecond, HeartbeatInterval: streamable.Disabled}, func(s *server.MCPServer) {
		mcpSrv = s
		s.AddTool(mcp.NewTool("stubborn"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release // ignores cancellation
			_ = mcpSrv.SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "data": "late progress"})
			return mcp.NewToolResultText("stubborn done"), nil
		})
	})
	c := session20250326(t, r)
	answer := make(chan *testutil.Response, 1)
	go func() {
		resp, err := c.PostRaw(context.Background(), []byte(`[`+
			`{"jsonrpc":"2.0","id":1,"method":"ping"},`+
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stubborn","arguments":{}}}]`))
		if err != nil {
			t.Error(err)
		}
		answer <- resp
	}()
	<-started
	// DELETE cancels the tool, which ignores it; after CleanupTimeout the
	// termination gives up and interrupts the session's writers.
	del, err := c.Delete(testutil.Context(t, wait))
	if err != nil || del.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %v", del, err)
	}
	close(release)
	var resp *testutil.Response
	select {
	case resp = <-answer:
	case <-time.After(wait):
		t.Fatal("no answer to the batch")
	}
	if resp == nil {
		return
	}
	t.Logf("batch answered %d, Content-Type %q, body %q, events %d, messages %+v", resp.Status, resp.Header.Get("Content-Type"), resp.Body, len(resp.Events), resp.Messages)
	ids := map[string]bool{}
	msgs := resp.Messages
	if !resp.IsSSE() {
		var arr []testutil.Message
		if err := json.Unmarshal(resp.Body, &arr); err != nil {
			t.Fatalf("the batch's JSON answer is not an array: %v", err)
		}
		msgs = arr
	}
	for _, m := range msgs {
		ids[string(m.ID)] = true
	}
	if !ids["1"] || !ids["2"] {
		t.Fatalf("the batch's answer holds %d messages (ids %v): the ping's answer (id 1), made before the DELETE, and the tool's (id 2) are lost; "+
			"the same request outside a batch is answered with its result (respondJSON: its stream never began)", len(msgs), ids)
	}
}
