package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestStatelessServesWithoutSessions(t *testing.T) {
	r := newRig(t, streamable.Config{Stateless: true})
	c := r.client()
	ctx := testutil.Context(t, wait)
	init, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "initialize", init.Status, http.StatusOK, init.Body)
	if id := init.Header.Get("Mcp-Session-Id"); id != "" {
		t.Fatalf("stateless initialize issued session id %q", id)
	}
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "no session"})
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); resp.Status != http.StatusOK || !strings.Contains(string(last.Result), "no session") {
		t.Fatalf("stateless tools/call: %d %s", resp.Status, resp.Body)
	}
	get, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "stateless GET", get.Status, http.StatusMethodNotAllowed, get.Body, "stateless")
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Fatalf("stateless requests left %d sessions", st.Sessions)
	}
}

// Two clients calling at once each get exactly their own request's
// notifications (stock mcp-go delivers one client's to another).
func TestStatelessNeverMixesClients(t *testing.T) {
	r := newRig(t, streamable.Config{Stateless: true}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("tagged", mcp.WithString("tag")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tag := req.GetString("tag", "")
			for i := range 20 {
				_ = s.SendNotificationToClient(ctx, "notifications/message",
					map[string]any{"level": "info", "data": map[string]any{"tag": tag, "i": i}})
			}
			return mcp.NewToolResultText(tag), nil
		})
	})
	ctx := testutil.Context(t, wait)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for client := range 8 {
		wg.Go(func() {
			tag := string(rune('a' + client))
			resp, err := r.client().CallTool(ctx, "tagged", map[string]any{"tag": tag})
			if err != nil {
				errs <- err
				return
			}
			if len(resp.Messages) != 21 {
				errs <- fmt.Errorf("client %s: %d messages, want 20 notifications and the response", tag, len(resp.Messages))
				return
			}
			for _, m := range resp.Messages[:20] {
				var p struct {
					Data struct {
						Tag string `json:"tag"`
					} `json:"data"`
				}
				if json.Unmarshal(m.Params, &p) != nil || p.Data.Tag != tag {
					errs <- fmt.Errorf("client %s got a notification of client %q", tag, p.Data.Tag)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestStatelessRefusesServerRequests(t *testing.T) {
	r := newRig(t, streamable.Config{Stateless: true}, func(s *server.MCPServer) {
		s.EnableSampling()
		s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{})
			return mcp.NewToolResultText(err.Error()), nil
		})
	})
	resp, err := r.client().CallTool(testutil.Context(t, wait), "ask", nil)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), "stateless mode") {
		t.Fatalf("sampling in stateless mode: %s", last.Result)
	}
}

func TestStatelessChecksTheProtocolVersion(t *testing.T) {
	r := newRig(t, streamable.Config{Stateless: true})
	c := r.client()
	c.ProtocolVersion = "1999-01-01"
	resp, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "stateless, bad version", resp.Status, http.StatusBadRequest, resp.Body, "MCP-Protocol-Version")
}

func TestStatelessRequestOutlivesTheIdleTTL(t *testing.T) {
	gate := make(chan struct{})
	r := newRig(t, streamable.Config{Stateless: true, IdleTTL: testIdleTTL}, gatedTool(gate))
	ctx := testutil.Context(t, wait)
	call := callGated(t, ctx, r.client())
	// Keep-alives every 5 ms: 60 of them span three idle TTLs.
	for range 60 {
		if _, err := call.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	m, err := call.NextMessage(ctx)
	if err != nil || m.Result == nil {
		t.Fatalf("a stateless request outliving the idle TTL answered %+v, %v", m, err)
	}
}
