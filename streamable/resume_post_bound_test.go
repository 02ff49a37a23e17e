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

// A client cannot grow the requests that run on without a connection:
// past the session's bound of let-go requests, a request whose client
// leaves is cancelled, as without a log, and says why.
func TestLetGoRequestsOfASessionAreBounded(t *testing.T) {
	const bound = 32 // maxResumedStreams: one resumer per let-go request
	causes := make(chan error, bound+1)
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("forever"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	for i := range bound + 1 {
		call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "forever"}})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := call.Next(ctx); err != nil || !ev.IsPriming() {
			t.Fatalf("call %d: first event %+v (%v), want the priming event", i, ev, err)
		}
		call.Close() // the client leaves with an id it could resume from
	}
	select {
	case cause := <-causes:
		if cause == nil || !strings.Contains(cause.Error(), "let go of") {
			t.Fatalf("a request was cancelled with %v, want the bound on let-go requests", cause)
		}
	case <-ctx.Done():
		t.Fatalf("%d requests of one session run on without a client connection", bound+1)
	}
	select {
	case cause := <-causes:
		t.Fatalf("a second request was cancelled (%v): only the one past the bound should be", cause)
	default:
	}
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %+v %v", resp, err)
	}
}

// At the session's bound of let-go requests, CloseSSEStream reports false
// at once (not after the write timeout) and the response stays: its
// client gets the answer on it.
func TestCloseSSEStreamAtTheLetGoBoundKeepsTheResponse(t *testing.T) {
	const bound = 32
	closed := make(chan bool, 1)
	r := newRig(t, streamable.Config{WriteTimeout: time.Hour}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("parked"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			closed <- streamable.CloseSSEStream(ctx) // let go of once it returns true
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
		s.AddTool(mcp.NewTool("polled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			closed <- streamable.CloseSSEStream(ctx)
			return mcp.NewToolResultText("answered on the response"), nil
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	post := func(id any, tool string) *testutil.Stream {
		call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": tool}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(call.Close)
		return call
	}
	for i := range bound {
		post(i, "parked")
		if !bbAwait(t, closed, wait, "CloseSSEStream returned") {
			t.Fatalf("CloseSSEStream of parked call %d reported false under the bound", i)
		}
	}
	call := post("polled", "polled")
	if bbAwait(t, closed, wait, "CloseSSEStream returned at the bound") {
		t.Fatalf("CloseSSEStream let go of a response past the bound of %d", bound)
	}
	answer, err := call.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "" })
	if err != nil || !strings.Contains(string(answer.Result), "answered on the response") {
		t.Fatalf("answer %+v (%v), want the result on the kept response", answer, err)
	}
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %+v %v", resp, err)
	}
}
