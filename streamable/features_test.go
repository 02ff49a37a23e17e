package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestListChangedGoesOnTheGetStream(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	r.mcp.AddTool(mcp.NewTool("late_tool"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	m, err := s.NextMatching(testutil.Context(t, wait), notPing)
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want notifications/tools/list_changed", m)
	}
}

func TestSessionScopedToolsAreSeenByTheirSessionOnly(t *testing.T) {
	r := newRig(t, streamable.Config{})
	a, b := r.session(), r.session()
	err := r.mcp.AddSessionTool(a.SessionID, mcp.NewTool("only_a"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("for a"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, wait)
	resp, err := a.CallTool(ctx, "only_a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); last.Error != nil || !strings.Contains(string(last.Result), "for a") {
		t.Fatalf("session a calling its own tool: %s", resp.Body)
	}
	resp, err = b.CallTool(ctx, "only_a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); last.Error == nil && !strings.Contains(string(last.Result), `"isError":true`) {
		t.Fatalf("session b called session a's tool: %s", resp.Body)
	}
}

func TestResourceUpdatedReachesSubscribedSessions(t *testing.T) {
	const uri = "test://watched"
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		server.WithResourceCapabilities(true, true)(s)
		s.AddResource(mcp.NewResource(uri, "watched"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "v1"}}, nil
		})
	})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	if resp, err := c.Call(ctx, "resources/subscribe", map[string]any{"uri": uri}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("subscribe: %v %+v", err, resp)
	}
	r.mcp.SendNotificationToAllClients("notifications/resources/updated", map[string]any{"uri": uri})
	m, err := s.NextMatching(ctx, notPing)
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != "notifications/resources/updated" || !strings.Contains(string(m.Params), uri) {
		t.Fatalf("got %+v, want notifications/resources/updated for %s", m, uri)
	}
}

// A server request made outside any client request (here from a hook's
// session handle) goes on the GET stream, and the client's answer POSTed
// back reaches the caller.
func TestServerRequestOutsideARequestGoesOnTheGetStream(t *testing.T) {
	var mu sync.Mutex
	var sess server.ClientSession
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
			mu.Lock()
			sess = cs
			mu.Unlock()
		})
		server.WithHooks(hooks)(s)
	})
	c := r.session()
	s := r.stream(c)
	mu.Lock()
	roots, ok := sess.(server.SessionWithRoots)
	mu.Unlock()
	if !ok {
		t.Fatal("the session does not support roots/list")
	}
	ctx := testutil.Context(t, wait)
	type answer struct {
		res *mcp.ListRootsResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := roots.ListRoots(ctx, mcp.ListRootsRequest{})
		got <- answer{res, err}
	}()
	req, err := s.NextMatching(ctx, notPing)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "roots/list" {
		t.Fatalf("got %+v, want roots/list", req)
	}
	resp, err := c.Reply(ctx, req.ID, map[string]any{"roots": []map[string]any{{"uri": "file:///work", "name": "work"}}})
	if err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("answer: %v %+v", err, resp)
	}
	a := <-got
	if a.err != nil || len(a.res.Roots) != 1 || a.res.Roots[0].URI != "file:///work" {
		b, _ := json.Marshal(a.res)
		t.Fatalf("ListRoots returned %s, %v", b, a.err)
	}
}
