package streamable_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// addBlockTool adds "block", which signals entered and returns only when
// its request is cancelled.
func addBlockUntilCancelledTool(entered chan<- struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, fmt.Errorf("block: %w", context.Cause(ctx))
		})
	}
}

// TestCloseSessionsEndsEverySessionAndServesOn: CloseSessions ends every
// session as DELETE does (the GET stream closed, the running call
// cancelled and answered with its id, the session unregistered, 404 for
// its id afterwards) before it returns, and a new initialize is served.
func TestCloseSessionsEndsEverySessionAndServesOn(t *testing.T) {
	var unregistered atomic.Int64
	entered := make(chan struct{}, 1)
	r := newRig(t, streamable.Config{}, addBlockUntilCancelledTool(entered), func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { unregistered.Add(1) })
		server.WithHooks(hooks)(s)
	})
	ctx := testutil.Context(t, wait)
	a, b := r.session(), r.session()
	s := r.stream(a)
	if _, err := s.Next(ctx); err != nil {
		t.Fatal(err)
	}
	call, err := a.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "block"}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the call never started")
	}

	if err := r.h.CloseSessions(ctx); err != nil {
		t.Fatalf("CloseSessions: %v", err)
	}
	// Not eventually: CloseSessions returned.
	if st := r.h.Stats(); st.Sessions != 0 || st.GetStreams != 0 {
		t.Fatalf("after CloseSessions: %+v, want no session and no stream", st)
	}
	if n := unregistered.Load(); n != 2 {
		t.Errorf("unregister hooks ran %d times, want 2", n)
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		t.Fatal("the GET stream is still open")
	}
	answer, err := call.NextMessage(ctx)
	if err != nil {
		t.Fatalf("the running call got no answer: %v", err)
	}
	if string(answer.ID) != "7" || (answer.Error == nil && len(answer.Result) == 0) {
		t.Errorf("the running call's answer: %+v, want an answer to id 7", answer)
	}
	for name, c := range map[string]*testutil.Client{"a": a, "b": b} {
		resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "POST on closed session "+name, resp.Status, resp.Body)
		del, err := c.Delete(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "DELETE of closed session "+name, del.Status, del.Body)
	}
	c := r.session()
	if resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("a new session after CloseSessions: %v %+v", err, resp)
	}
	if err := r.h.CloseSessions(ctx); err != nil { // and again, with one session
		t.Fatal(err)
	}
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Fatalf("after the second CloseSessions: %+v", st)
	}
}

// TestCloseSessionsBoundedByContext: a call that ignores cancellation
// holds CloseSessions only until ctx ends (the cleanup timeout is longer),
// which it reports; the session is gone all the same.
func TestCloseSessionsBoundedByContext(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	r := newRig(t, streamable.Config{CleanupTimeout: wait}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("stubborn"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			<-release
			return mcp.NewToolResultText("late"), nil
		})
	})
	defer close(release)
	ctx := testutil.Context(t, wait)
	c := r.session()
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "stubborn"}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	<-entered
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := r.h.CloseSessions(short); err == nil {
		t.Fatal("CloseSessions returned nil with a handler still running at ctx's end")
	}
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "POST after CloseSessions", resp.Status, resp.Body)
}

// TestClusterCloseSessions: CloseSessions on one replica ends its sessions
// on every replica: the stream held by another closes, and every replica
// answers 404.
func TestClusterCloseSessions(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(c.client(1, a)) // held by B
	ctx := testutil.Context(t, wait)
	if err := c.replicas[0].h.CloseSessions(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.Ended():
	case <-ctx.Done():
		t.Fatal("B's stream is still open after CloseSessions on A")
	}
	for i := range 3 {
		resp, err := c.client(i, a).CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("POST on replica %d", i), resp.Status, http.StatusNotFound, resp.Body)
	}
	n := c.session(0)
	toolText(t, c.client(2, n), "echo", map[string]any{"text": "served on"})
}
