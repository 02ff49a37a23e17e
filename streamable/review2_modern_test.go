package streamable_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func regionalText(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText(req.GetString("region", "")), nil
}

// A tool registered again after its schema gained an x-mcp-header
// parameter, the way mcp-go's builders make one (setting the key on the
// property's map, as TestModernParamHeadersChecked does), is checked
// again: a call without the Mcp-Param header is refused. The cache keys
// its entry by the identity and length of the top-level properties map,
// which did not change, and keeps answering "no x-mcp-header".
func TestReview2_ToolReregisteredWithHeaderParamIsChecked(t *testing.T) {
	var mcpServer *server.MCPServer
	tool := mcp.NewTool("regional", mcp.WithString("region", mcp.Required()))
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		mcpServer = s
		s.AddTool(tool, regionalText)
	})
	ctx := testutil.Context(t, wait)
	call := func() *testutil.Response {
		return r.modernPost(ctx, t, modernMsg(3, "tools/call", map[string]any{"name": "regional",
			"arguments": map[string]any{"region": "Hello"}}, nil), nil)
	}
	if resp := call(); resp.Status != http.StatusOK {
		t.Fatalf("before the header parameter: %d %s", resp.Status, resp.Body)
	}
	tool.InputSchema.Properties["region"].(map[string]any)["x-mcp-header"] = "Region"
	mcpServer.AddTool(tool, regionalText)
	if resp := call(); resp.Status != http.StatusBadRequest {
		t.Fatalf("tools/call without Mcp-Param-Region after the tool was registered again with region as x-mcp-header answered %d, want 400: %s",
			resp.Status, resp.Body)
	}
}

// The cache's key is made of addresses it does not keep alive (uintptr):
// a tool deleted and registered again with a new schema of the same size
// may find its schema where the old one was, and the stale entry. A call
// without the header the new schema asks for must still be refused.
func TestReview2_ToolHeaderCacheSurvivesAddressReuse(t *testing.T) {
	var mcpServer *server.MCPServer
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) { mcpServer = s })
	ctx := testutil.Context(t, wait)
	pad := strings.Repeat("p", 900)
	schema := func(key string) []byte { // same length for both keys
		return []byte(fmt.Sprintf(`{"type":"object","description":%q,"properties":{"region":{"type":"string","%s":"Region"}}}`, pad, key))
	}
	call := func() *testutil.Response {
		return r.modernPost(ctx, t, modernMsg(3, "tools/call", map[string]any{"name": "regional",
			"arguments": map[string]any{"region": "Hello"}}, nil), nil)
	}
	for i := range 200 {
		mcpServer.AddTool(mcp.NewToolWithRawSchema("regional", "", schema("x-mcp-nohdr!")), regionalText)
		if resp := call(); resp.Status != http.StatusOK {
			t.Fatalf("round %d, no header parameter: %d %s", i, resp.Status, resp.Body)
		}
		mcpServer.DeleteTools("regional")
		runtime.GC()
		mcpServer.AddTool(mcp.NewToolWithRawSchema("regional", "", schema("x-mcp-header")), regionalText)
		if resp := call(); resp.Status != http.StatusBadRequest {
			t.Fatalf("round %d: tools/call without Mcp-Param-Region, for a tool registered again with region as x-mcp-header, answered %d, want 400: %s",
				i, resp.Status, resp.Body)
		}
		mcpServer.DeleteTools("regional")
	}
}

// A task tool (MCPServer.AddTaskTool) whose schema declares an
// x-mcp-header parameter is checked as a tool is: mcp-go's own handler
// looks the tool up among task tools too (toolForHeaderValidation), and a
// tools/call without the Mcp-Param header is refused -32020. checkModern
// looks only at GetTool, so the call is not checked at all (and mcp-go,
// without its unexported header key, skips the check too).
func TestReview2_TaskToolParamHeadersChecked(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		server.WithTaskCapabilities(true, true, true)(s)
		tool := mcp.NewTool("regional_task", mcp.WithString("region", mcp.Required()), mcp.WithTaskSupport(mcp.TaskSupportRequired))
		tool.InputSchema.Properties["region"].(map[string]any)["x-mcp-header"] = "Region"
		s.AddTaskTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
			return &mcp.CreateTaskResult{}, nil
		})
	})
	ctx := testutil.Context(t, wait)
	resp := r.modernPost(ctx, t, modernMsg(3, "tools/call", map[string]any{"name": "regional_task",
		"arguments": map[string]any{"region": "Hello"}, "task": map[string]any{}}, nil), nil)
	if resp.Status != http.StatusBadRequest {
		t.Fatalf("tools/call of a task tool without its Mcp-Param-Region header answered %d, want 400: %s", resp.Status, resp.Body)
	}
	if id, code, _, _ := rpcErrorOf(t, resp); id != "3" || code != mcp.HEADER_MISMATCH {
		t.Fatalf("tools/call of a task tool without its Mcp-Param-Region header: id %s code %d, want -32020: %s", id, code, resp.Body)
	}
}

// A 2026-07-28 request whose body escapes the "/" of the _meta key
// ("io.modelcontextprotocol\/protocolVersion", valid JSON that some
// encoders write by default) names its version as much as one that does
// not: mcp-go decodes it alike. eraOf looks for the key's bytes before
// decoding, misses it, and the request is refused -32602 as if its _meta
// named no version.
func TestReview2_EscapedMetaVersionKeyAccepted(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	body := []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"` +
		mcp.ProtocolVersion20260728 + `","io.modelcontextprotocol\/clientCapabilities":{}}}}`)
	resp := r.modernPost(ctx, t, body, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("tools/list whose _meta key escapes its slash answered %d, want 200: %s", resp.Status, resp.Body)
	}
}

// RequireClientCapabilities refuses a request whose client did not
// declare a capability the handler needs, whichever it is: the
// extensions and tasks capabilities of ClientCapabilities too, not only
// sampling, elicitation, roots and experimental ones. missingCapabilities
// looks at those four only, so a handler needing an extension or tasks
// runs for a client that declared neither.
func TestReview2_RequireClientCapabilitiesChecksExtensionsAndTasks(t *testing.T) {
	needs := map[string]mcp.ClientCapabilities{
		"needs_extension": {Extensions: map[string]any{"io.example/ui": map[string]any{}}},
		"needs_tasks":     {Tasks: &mcp.TasksCapability{}},
	}
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		for name, required := range needs {
			s.AddTool(mcp.NewTool(name), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := streamable.RequireClientCapabilities(ctx, required); err != nil {
					return nil, err
				}
				return mcp.NewToolResultText("ran"), nil
			})
		}
	})
	ctx := testutil.Context(t, wait)
	for name := range needs {
		resp := r.modernPost(ctx, t, modernMsg("c", "tools/call", map[string]any{"name": name}, nil), nil)
		if resp.Status != http.StatusBadRequest {
			t.Errorf("%s, for a client that declared no capability, answered %d, want 400 -32021: %s", name, resp.Status, resp.Body)
			continue
		}
		if id, code, _, _ := rpcErrorOf(t, resp); id != `"c"` || code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			t.Errorf("%s: id %s code %d", name, id, code)
		}
	}
}
