package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Every 2026-07-28 refusal is a 400 (404 for an unknown method) carrying
// the code that version defines and the request's own id.
func TestModernRequestsRefusedWithTheirCodeAndID(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	later := map[string]any{mcp.MetaKeyProtocolVersion: "v999.0.0"}
	noMeta := map[string]any{mcp.MetaKeyProtocolVersion: nil}
	noCaps := map[string]any{mcp.MetaKeyClientCapabilities: nil}
	cases := []struct {
		name   string
		body   []byte
		extra  map[string]string
		status int
		code   int
		says   string
	}{
		{"unknown later version", modernMsg(7, "tools/list", nil, later), map[string]string{"MCP-Protocol-Version": "v999.0.0"},
			http.StatusBadRequest, mcp.UNSUPPORTED_PROTOCOL_VERSION, "v999.0.0"},
		{"header missing", modernMsg(7, "tools/list", nil, nil), map[string]string{"MCP-Protocol-Version": ""},
			http.StatusBadRequest, mcp.HEADER_MISMATCH, "header is required"},
		{"_meta version missing", modernMsg(7, "tools/list", nil, noMeta), nil,
			http.StatusBadRequest, mcp.INVALID_PARAMS, "_meta"},
		{"header and _meta disagree", modernMsg(7, "tools/list", nil, nil), map[string]string{"MCP-Protocol-Version": "v999.0.0"},
			http.StatusBadRequest, mcp.HEADER_MISMATCH, "does not match"},
		{"capabilities missing", modernMsg(7, "tools/list", nil, noCaps), nil,
			http.StatusBadRequest, mcp.INVALID_PARAMS, "clientCapabilities"},
		{"Mcp-Method missing", modernMsg(7, "tools/list", nil, nil), map[string]string{"Mcp-Method": ""},
			http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Method"},
		{"Mcp-Method another method", modernMsg(7, "tools/list", nil, nil), map[string]string{"Mcp-Method": "prompts/list"},
			http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Method"},
		{"Mcp-Method in capitals", modernMsg(7, "tools/list", nil, nil), map[string]string{"Mcp-Method": "TOOLS/LIST"},
			http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Method"},
		{"Mcp-Name another tool", modernMsg(7, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil),
			map[string]string{"Mcp-Name": "wrong_tool_name"}, http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Name"},
		{"Mcp-Name missing", modernMsg(7, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil),
			map[string]string{"Mcp-Name": ""}, http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Name"},
		// resources/read names its uri, not a name member beside it.
		{"Mcp-Name the name, not the uri", modernMsg(7, "resources/read", map[string]any{"uri": "file:///a", "name": "b"}, nil),
			map[string]string{"Mcp-Name": "b"}, http.StatusBadRequest, mcp.HEADER_MISMATCH, "file:///a"},
		{"unknown method", modernMsg(7, "no/such", nil, nil), nil,
			http.StatusNotFound, mcp.METHOD_NOT_FOUND, ""},
		{"initialize removed", modernMsg(7, "initialize", nil, nil), nil,
			http.StatusNotFound, mcp.METHOD_NOT_FOUND, ""},
		{"ping removed", modernMsg(7, "ping", nil, nil), nil,
			http.StatusNotFound, mcp.METHOD_NOT_FOUND, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := r.modernPost(ctx, t, tc.body, tc.extra)
			if resp.Status != tc.status {
				t.Fatalf("answered %d, want %d: %s", resp.Status, tc.status, resp.Body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Fatal("a 2026-07-28 answer carries an Mcp-Session-Id")
			}
			id, code, msg, _ := rpcErrorOf(t, resp)
			if id != "7" || code != tc.code || !strings.Contains(msg, tc.says) {
				t.Fatalf("error id %s code %d %q; want id 7, code %d, saying %q", id, code, msg, tc.code, tc.says)
			}
		})
	}
}

// A later version than any served gets UnsupportedProtocolVersionError,
// whose data lists what is served (as server/discover does) and echoes what
// was asked.
func TestModernUnknownVersionListsSupportedVersions(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	resp := r.modernPost(ctx, t, modernMsg("a", "tools/list", nil, map[string]any{mcp.MetaKeyProtocolVersion: "v999.0.0"}),
		map[string]string{"MCP-Protocol-Version": "v999.0.0"})
	_, _, _, data := rpcErrorOf(t, resp)
	var d struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	if err := json.Unmarshal(data, &d); err != nil || d.Requested != "v999.0.0" || len(d.Supported) == 0 ||
		d.Supported[0] != mcp.ProtocolVersion20260728 {
		t.Fatalf("data %s: want supported (2026-07-28 first) and requested v999.0.0", data)
	}
	disc := r.modernPost(ctx, t, modernMsg(1, "server/discover", nil, nil), nil)
	if disc.Status != http.StatusOK {
		t.Fatalf("server/discover answered %d: %s", disc.Status, disc.Body)
	}
	var res struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(disc.Body, &res); err != nil || strings.Join(res.Result.SupportedVersions, ",") != strings.Join(d.Supported, ",") {
		t.Fatalf("discover lists %v, the error %v: they must agree", res.Result.SupportedVersions, d.Supported)
	}
}

// Mcp-Param-* headers mirror a tool's x-mcp-header parameters: decoded
// from Base64, compared with the body, and refused when they hold
// characters a header value must not.
func TestModernParamHeadersChecked(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		tool := mcp.NewTool("regional", mcp.WithString("region", mcp.Required()))
		tool.InputSchema.Properties["region"].(map[string]any)["x-mcp-header"] = "Region"
		s.AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("region", "")), nil
		})
	})
	ctx := testutil.Context(t, wait)
	call := func(region string, hdr map[string]string) *testutil.Response {
		return r.modernPost(ctx, t, modernMsg(3, "tools/call", map[string]any{"name": "regional",
			"arguments": map[string]any{"region": region}}, nil), hdr)
	}
	for _, h := range []string{"Hello", "=?base64?SGVsbG8=?="} {
		if resp := call("Hello", map[string]string{"Mcp-Param-Region": h}); resp.Status != http.StatusOK {
			t.Fatalf("Mcp-Param-Region %q for Hello answered %d: %s", h, resp.Status, resp.Body)
		}
	}
	for _, h := range []string{"Bye", "=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "H\xc3\xa9llo"} {
		resp := call("Hello", map[string]string{"Mcp-Param-Region": h})
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("Mcp-Param-Region %q for Hello answered %d, want 400: %s", h, resp.Status, resp.Body)
		}
		if id, code, _, _ := rpcErrorOf(t, resp); id != "3" || code != mcp.HEADER_MISMATCH {
			t.Fatalf("Mcp-Param-Region %q: id %s code %d", h, id, code)
		}
	}
	if resp := call("Hello", nil); resp.Status != http.StatusBadRequest {
		t.Fatalf("no Mcp-Param-Region for a value in the body answered %d, want 400", resp.Status)
	}
}

// A handler that needs a capability the request did not declare is
// answered -32021 (400), naming what it needs.
func TestModernMissingCapabilityAnswered32021(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("needs_sampling"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := streamable.RequireClientCapabilities(ctx, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText("ok"), nil
		})
	})
	ctx := testutil.Context(t, wait)
	body := modernMsg("c", "tools/call", map[string]any{"name": "needs_sampling"}, nil)
	resp := r.modernPost(ctx, t, body, nil)
	if resp.Status != http.StatusBadRequest {
		t.Fatalf("answered %d, want 400: %s", resp.Status, resp.Body)
	}
	id, code, _, data := rpcErrorOf(t, resp)
	if id != `"c"` || code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY || !strings.Contains(string(data), `"requiredCapabilities":{"sampling":{}}`) {
		t.Fatalf("id %s code %d data %s", id, code, data)
	}
	ok := r.modernPost(ctx, t, modernMsg("d", "tools/call", map[string]any{"name": "needs_sampling"},
		map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"sampling": map[string]any{}}}), nil)
	if ok.Status != http.StatusOK || !strings.Contains(string(ok.Body), `"ok"`) {
		t.Fatalf("with sampling declared: %d %s", ok.Status, ok.Body)
	}
}

// A 2026-07-28 notification is accepted with 202 and no body; a client's
// response (that version has no server-to-client requests) is refused.
func TestModernNotificationAcceptedResponseRefused(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	resp := r.modernPost(ctx, t, modernMsg(nil, "notifications/cancelled", map[string]any{"requestId": 1}, nil), nil)
	if resp.Status != http.StatusAccepted || len(resp.Body) != 0 {
		t.Fatalf("notification answered %d %q", resp.Status, resp.Body)
	}
	reply := r.modernPost(ctx, t, []byte(`{"jsonrpc":"2.0","id":5,"result":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), nil)
	if reply.Status != http.StatusBadRequest {
		t.Fatalf("a response answered %d, want 400: %s", reply.Status, reply.Body)
	}
	if id, code, _, _ := rpcErrorOf(t, reply); id != "5" || code != mcp.INVALID_REQUEST {
		t.Fatalf("id %s code %d", id, code)
	}
}
