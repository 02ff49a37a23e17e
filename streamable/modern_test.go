package streamable_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// mcp-go's own client speaks 2026-07-28 by default; lifeline serves it by
// delegating to mcp-go's handler.
func TestModernProtocolConversationWithMCPGoClient(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.mcpgoClient(nil)
	ctx := testutil.Context(t, wait)
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "modern", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %q, want %q", res.ProtocolVersion, mcp.ProtocolVersion20260728)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	call := mcp.CallToolRequest{}
	call.Params.Name = "echo"
	call.Params.Arguments = map[string]any{"text": "modern"}
	out, err := c.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	if text, ok := out.Content[0].(mcp.TextContent); !ok || text.Text != "modern" {
		t.Fatalf("echo answered %+v", out.Content)
	}
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Fatalf("a 2026-07-28 conversation created %d lifeline sessions", st.Sessions)
	}
}

func TestModernGetAndDeleteGet405(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.client()
	c.ProtocolVersion = mcp.ProtocolVersion20260728
	ctx := testutil.Context(t, wait)
	get, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "GET 2026-07-28", get.Status, http.StatusMethodNotAllowed, get.Body, "2026-07-28")
	del, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "DELETE 2026-07-28", del.Status, http.StatusMethodNotAllowed, del.Body, "2026-07-28")
	if del.Header.Get("Allow") != "POST" {
		t.Fatalf("Allow %q, want POST", del.Header.Get("Allow"))
	}
}

func TestModernListenStreamGetsKeepAlives(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.client()
	c.ProtocolVersion = mcp.ProtocolVersion20260728
	ctx := testutil.Context(t, wait)
	req, err := c.NewRequest(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+
		`"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		t.Fatalf("listen answered %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body[:n])
	}
	rd := testutil.NewSSEReader(resp.Body)
	keepalives := 0
	for keepalives < 3 {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("listen stream ended after %d keep-alives: %v", keepalives, err)
		}
		if ev.IsComment() && ev.Comment == "keepalive" {
			keepalives++
		}
	}
	// Shutdown ends the listen stream and waits for its handler.
	sctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.h.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown with a listen stream open: %v", err)
	}
	// What was written before is still readable; then the stream ends.
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			if _, err := rd.Next(); err != nil {
				return
			}
		}
	}()
	select {
	case <-ended:
	case <-time.After(2 * time.Second):
		resp.Body.Close() // frees the reader
		<-ended
		t.Fatal("the listen stream outlived Shutdown")
	}
}

func TestModernRequestsGetHeadersAndContextFunc(t *testing.T) {
	cfg := streamable.Config{ContextFunc: func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, tenantKey{}, r.Header.Get("X-Tenant"))
	}}
	r := newRig(t, cfg, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tenant, _ := ctx.Value(tenantKey{}).(string)
			return mcp.NewToolResultText(tenant + "/" + streamable.RequestHeader(ctx).Get("X-Tenant")), nil
		})
	})
	c := r.mcpgoClient(map[string]string{"X-Tenant": "acme"})
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "whoami"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(mcp.TextContent).Text; text != "acme/acme" {
		t.Fatalf("a 2026-07-28 tool saw %q, want the ContextFunc value and the header", text)
	}
}
