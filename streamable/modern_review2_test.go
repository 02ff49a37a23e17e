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

// A tool registered again with an x-mcp-header parameter added in place
// has its Mcp-Param-* headers checked: the schema is looked at, not
// remembered.
func TestModernToolRegisteredAgainWithAHeaderParamIsChecked(t *testing.T) {
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

// Tools deleted and registered again, their schemas reusing addresses,
// have their x-mcp-header parameters checked every time.
func TestModernToolHeaderParamsFoundWhateverTheSchemaAddress(t *testing.T) {
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

// A task tool's x-mcp-header parameters are checked like a tool's (found
// through tools/list: mcp-go exports no getter for task tools).
func TestModernTaskToolParamHeadersChecked(t *testing.T) {
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

// A body whose _meta key escapes its "/" ("io.modelcontextprotocol\/...",
// valid JSON some encoders write by default) names its version like one
// that does not.
func TestModernEscapedMetaVersionKeyAccepted(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	body := []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"` +
		mcp.ProtocolVersion20260728 + `","io.modelcontextprotocol\/clientCapabilities":{}}}}`)
	resp := r.modernPost(ctx, t, body, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("tools/list whose _meta key escapes its slash answered %d, want 200: %s", resp.Status, resp.Body)
	}
}

// RequireClientCapabilities compares the tasks and extensions
// capabilities too.
func TestRequireClientCapabilitiesChecksExtensionsAndTasks(t *testing.T) {
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
