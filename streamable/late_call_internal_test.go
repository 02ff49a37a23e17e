package streamable

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A tool that hands its request's session to work that outlives the
// request (a background task asking the client something later): such a
// call fails at once, the request's stream being gone, and leaves nothing
// in the session's call table.
func TestLateRequestSessionCallLeavesNoEntries(t *testing.T) {
	got := make(chan server.ClientSession, 1)
	s := server.NewMCPServer("late", "1", server.WithToolCapabilities(true))
	s.EnableSampling()
	s.AddTool(mcp.NewTool("keep_session"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got <- server.ClientSessionFromContext(ctx)
		return mcp.NewToolResultText("ok"), nil
	})
	h := New(s, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), HeartbeatInterval: Disabled})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()
	c := testutil.NewClient(ts.URL)
	ctx := testutil.Context(t, 10*time.Second)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "keep_session", nil); err != nil {
		t.Fatal(err)
	}
	rs := <-got // the request has returned
	const calls = 5
	for range calls {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := rs.(server.SessionWithSampling).RequestSampling(cctx, mcp.CreateMessageRequest{
			CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 1}})
		cancel()
		if err == nil {
			t.Fatal("sampling on a returned request's session succeeded")
		}
	}
	h.mu.Lock()
	sess := h.sessions[c.SessionID]
	h.mu.Unlock()
	sess.calls.mu.Lock()
	n, w := len(sess.calls.out), sess.calls.withdrawn
	sess.calls.mu.Unlock()
	if n != 0 || w != 0 {
		t.Fatalf("after %d sampling calls on a returned request's session, callTable.out holds %d entries (%d withdrawn) that nothing will ever remove", calls, n, w)
	}
}
