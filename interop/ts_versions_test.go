package interop

import (
	"slices"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// The TypeScript SDK's 1.x client cannot speak 2026-07-28: its newest
// version is 2025-11-25, it knows no later one, and on its defaults it
// connects with initialize (never server/discover) asking for 2025-11-25,
// then sends MCP-Protocol-Version 2025-11-25 with a session. This test
// fails when the pinned SDK learns 2026-07-28, so that it gets a test of
// its own (like modern_gosdk_test.go).
func TestTypeScriptClientProtocolVersions(t *testing.T) {
	node := nodeAndSDK(t)
	h := start(t, streamable.Config{})
	steps, order := runNodeScript(t, node, "versions.mjs", h.URL)
	checkSteps(t, steps, order, []string{"versions", "connect", "done"})
	if t.Failed() {
		t.FailNow()
	}
	v := steps["versions"]
	var supported []string
	for _, s := range v["supported"].([]any) {
		supported = append(supported, s.(string))
	}
	t.Logf("@modelcontextprotocol/sdk %s: latest %s, supported %v; negotiated %s", tsSDKVersion, v.str("latest"), supported,
		steps["connect"].str("protocolVersion"))
	if v.str("latest") != "2025-11-25" || slices.Contains(supported, modernVersion) {
		t.Fatalf("the TypeScript SDK %s now knows %s (latest %s, supported %v): add a test of it on that version",
			tsSDKVersion, modernVersion, v.str("latest"), supported)
	}
	exs := h.Wire.exchanges()
	if len(exs) == 0 || exs[0].RPC != "initialize" || !strings.Contains(exs[0].Request, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("the client did not start with initialize asking for 2025-11-25\nwire:\n%s", h.Wire.dump(""))
	}
	sid := steps["connect"].str("sessionId")
	for _, ex := range exs[1:] {
		if ex.RPC == "server/discover" || ex.Version != "2025-11-25" || ex.SessionID != sid || sid == "" {
			t.Fatalf("exchange %v: want MCP-Protocol-Version 2025-11-25 and session %s", ex, sid)
		}
	}
	t.Logf("wire:\n%s", h.Wire.dump(""))
}
