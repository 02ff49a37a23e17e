package streamable_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestBlackboxErrorAnswersCarryID(t *testing.T) {
	rig := bbStart(t, demotools.NewServer("bb-ids", "1"), streamable.Config{MaxSessions: 1}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	post := func(cl *testutil.Client, body string) *testutil.Response {
		t.Helper()
		resp, err := cl.PostRaw(ctx, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	check := func(what string, resp *testutil.Response, wantStatus int, wantID string, wantCode int) {
		t.Helper()
		if resp.Status != wantStatus {
			t.Errorf("%s: status %d, want %d: %s", what, resp.Status, wantStatus, resp.Body)
			return
		}
		id, code := bbErrorBody(t, resp.Body)
		if id != wantID {
			t.Errorf("%s: id %q, want %s: %s", what, id, wantID, resp.Body)
		}
		if wantCode != 0 && code != wantCode {
			t.Errorf("%s: code %d, want %d", what, code, wantCode)
		}
	}

	bad := rig.client()
	bad.SessionID, bad.ProtocolVersion = c.SessionID, "1999-01-01"
	check("unsupported MCP-Protocol-Version, numeric id",
		post(bad, `{"jsonrpc":"2.0","id":42,"method":"tools/list"}`), 400, `42`, -32600)
	check("unsupported MCP-Protocol-Version, string id",
		post(bad, `{"jsonrpc":"2.0","id":"req-x","method":"tools/list"}`), 400, `"req-x"`, -32600)
	check("jsonrpc other than 2.0",
		post(c, `{"jsonrpc":"1.0","id":45,"method":"tools/list"}`), 400, `45`, -32600)
	check("initialize carrying Mcp-Session-Id",
		post(c, `{"jsonrpc":"2.0","id":46,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`),
		400, `46`, -32600)
	fresh := rig.client()
	check("initialize beyond MaxSessions",
		post(fresh, `{"jsonrpc":"2.0","id":"init-2","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`),
		503, `"init-2"`, -32000)

	unknown := rig.client()
	unknown.SessionID, unknown.ProtocolVersion = "no-such-session", testutil.ProtocolVersion
	check("unknown session", post(unknown, `{"jsonrpc":"2.0","id":43,"method":"tools/list"}`), 404, `null`, -32001)

	if r, err := c.Delete(ctx); err != nil || r.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, r)
	}
	check("deleted session", post(c, `{"jsonrpc":"2.0","id":44,"method":"tools/list"}`), 404, `null`, -32001)
	check("deleted session, string id", post(c, `{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`), 404, `null`, -32001)
}
