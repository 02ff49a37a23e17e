package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestPanickingToolIsAnsweredAndTheServerLivesOn(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("boom"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("boom")
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	resp, err := c.CallTool(ctx, "boom", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "panicking tool", resp.Status, http.StatusOK, resp.Body)
	last, err := resp.Last()
	if err != nil || last.Error == nil || last.Error.Code != -32603 || !strings.Contains(last.Error.Message, "boom") {
		t.Fatalf("answer %+v (%v), want a -32603 error naming the panic", last, err)
	}
	if again, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil || again.Status != http.StatusOK {
		t.Fatalf("session after the panic: %v %+v", err, again)
	}
}

func TestUnknownSessionRunsNoHandler(t *testing.T) {
	var calls atomic.Int64
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("count"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return mcp.NewToolResultText("counted"), nil
		})
	})
	good := r.session()
	c := r.client()
	c.ProtocolVersion = testutil.ProtocolVersion
	ctx := testutil.Context(t, wait)
	for _, id := range []string{"unknown", good.SessionID + "x"} {
		c.SessionID = id
		resp, err := c.CallTool(ctx, "count", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "tools/call on "+id, resp.Status, resp.Body)
	}
	if calls.Load() != 0 {
		t.Fatalf("the tool ran %d times for unknown sessions", calls.Load())
	}
	if resp, err := good.CallTool(ctx, "count", nil); err != nil || resp.Status != http.StatusOK || calls.Load() != 1 {
		t.Fatalf("tool on the real session: %v %+v, calls %d", err, resp, calls.Load())
	}
}

// bigResultTool adds "big", whose JSON answer is 16 MiB: a client that
// does not read it leaves the response write blocked.
func bigResultTool(s *server.MCPServer) {
	text := strings.Repeat("y", 16<<20)
	s.AddTool(mcp.NewTool("big"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	})
}

// stalledBigCall calls the big tool (bigResultTool) from a client that
// never reads, and returns once the answer has begun: its 16 MiB write is
// then blocked on the connection.
func stalledBigCall(t *testing.T, r *rig, c *testutil.Client) *testutil.StalledReader {
	t.Helper()
	ctx := testutil.Context(t, wait)
	sr, err := testutil.DialStalled(ctx, r.ts.URL, "POST", map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": c.SessionID, "MCP-Protocol-Version": testutil.ProtocolVersion,
	}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big"}}`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.Close() })
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled POST: %q, %v", status, err)
	}
	return sr
}

func TestDeleteInterruptsABlockedJSONResponse(t *testing.T) {
	r := newRig(t, slowConfig(), bigResultTool)
	c := r.session()
	ctx := testutil.Context(t, wait)
	stalledBigCall(t, r, c)
	// The 16 MiB write is now blocked on the stalled connection; only an
	// interruption can end it before the one-minute write timeout.
	start := time.Now()
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	t.Logf("DELETE took %v", time.Since(start))
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("DELETE took %v; the blocked JSON response was not interrupted", took)
	}
}

func TestShutdownIsBoundedByItsContext(t *testing.T) {
	gate := make(chan struct{})
	r := newRig(t, slowConfig(), func(s *server.MCPServer) {
		// A tool that ignores cancellation until the gate opens.
		s.AddTool(mcp.NewTool("stubborn"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-gate
			return mcp.NewToolResultText("late"), nil
		})
	})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	c := r.session()
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "stubborn"}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	// A DELETE is already waiting for the stubborn request (up to its 30 s
	// cleanup timeout) when Shutdown starts.
	deleted := make(chan int, 1)
	go func() {
		resp, err := c.Delete(ctx)
		if err != nil {
			deleted <- 0
			return
		}
		deleted <- resp.Status
	}()
	testutil.Eventually(t, wait, "the DELETE to start terminating", func() bool {
		resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		return err == nil && resp.Status == http.StatusNotFound
	})
	sctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = r.h.Shutdown(sctx)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Shutdown(300ms) took %v", took)
	}
	if err == nil {
		t.Fatal("Shutdown reported success while a request was still running")
	}
	r.shutdownFailed = true
	release()
	if st := <-deleted; st != http.StatusOK {
		t.Fatalf("DELETE answered %d", st)
	}
}

func TestPanicDuringInitializeCreatesNoSession(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddAfterInitialize(func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) {
			panic("hook boom")
		})
		server.WithHooks(hooks)(s)
	})
	resp, err := r.client().Call(testutil.Context(t, wait), "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	last, err := resp.Last()
	if err != nil || last.Error == nil || last.Error.Code != -32603 {
		t.Fatalf("initialize with a panicking hook answered %+v (%v), want a -32603 error", last, err)
	}
	if resp.Header.Get("Mcp-Session-Id") != "" || r.h.Stats().Sessions != 0 {
		t.Fatalf("a failed initialize left a session (id %q, %d sessions)",
			resp.Header.Get("Mcp-Session-Id"), r.h.Stats().Sessions)
	}
}

func TestRequestWithoutAnswerGets202(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	// A message with a method, an id and a result is not a request mcp-go
	// answers; it gets 202 and no body rather than a "null" body.
	resp, err := c.Post(testutil.Context(t, wait), map[string]any{
		"jsonrpc": "2.0", "id": 2, "method": "tools/list", "result": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusAccepted || len(resp.Body) != 0 {
		t.Fatalf("answered %d %q", resp.Status, resp.Body)
	}
}
