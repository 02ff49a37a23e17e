package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The floor with FloorHeaderChecks refuses a 2026-07-28 tools/call whose
// Mcp-Name is not the tool's, as MCPServer does for mcp-go's own transport,
// and answers a right one; the floor without them answers both (what it
// skips).
func TestFloorHeaderChecksRunMCPServersChecks(t *testing.T) {
	for _, checks := range []bool{false, true} {
		p, err := StartPeer(Floor, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, FloorHeaderChecks: checks})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{ToolEcho, "not-" + ToolEcho} {
			status, code := floorCall(t, p.JSONURL, name)
			want, wantCode := http.StatusOK, 0
			if checks && name != ToolEcho {
				want, wantCode = http.StatusBadRequest, mcp.HEADER_MISMATCH
			}
			if status != want || code != wantCode {
				t.Errorf("checks %v, Mcp-Name %q: %d and error code %d, want %d and %d", checks, name, status, code, want, wantCode)
			}
		}
		p.Close()
	}
}

// floorCall posts a 2026-07-28 call of echo with name as its Mcp-Name and
// returns the status and the JSON-RPC error's code (0 for none).
func floorCall(t *testing.T, url, name string) (status, code int) {
	t.Helper()
	params := map[string]any{"name": ToolEcho, "arguments": map[string]any{"text": "x"}}
	resp := floorPost(t, url, params, true, name)
	defer resp.Body.Close()
	var answer struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatalf("the answer does not decode: %v", err)
	}
	if answer.Error != nil {
		code = answer.Error.Code
	}
	return resp.StatusCode, code
}

// floorPost posts a tools/call with params to url: in 2026-07-28 when
// modern (the version in params._meta and the headers, Mcp-Name set to name
// unless name is empty), else as a session-era request without a session.
// The caller closes the response's body.
func floorPost(t *testing.T, url string, params map[string]any, modern bool, name string) *http.Response {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if modern {
		if raw, err = modernParams(params); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": json.RawMessage(raw)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		setModernHeaders(req.Header, "tools/call", params)
		if name != "" {
			req.Header.Set(mcp.HeaderName, name)
		}
	} else {
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
