package interop

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// tsSDKVersion is the @modelcontextprotocol/sdk version ts/package.json pins.
const tsSDKVersion = "1.32.2"

// requireTSEnv, set to 1 (scripts/interop.sh does), turns the skip for a
// missing node or node_modules into a failure: CI must never skip.
const requireTSEnv = "LIFELINE_INTEROP_REQUIRE_TS"

// tsStep is one line client.mjs printed.
type tsStep map[string]any

func (s tsStep) str(key string) string {
	v, _ := s[key].(string)
	return v
}

func (s tsStep) num(key string) float64 {
	v, _ := s[key].(float64)
	return v
}

// nodeAndSDK returns the node binary, or skips (fails under requireTSEnv)
// naming what is missing.
func nodeAndSDK(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := what + "; install Node.js and run interop/ts/install.sh (scripts/interop.sh does both checks)"
		if os.Getenv(requireTSEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	pkg, err := os.ReadFile(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	if err != nil {
		missing("interop/ts/node_modules/@modelcontextprotocol/sdk is not installed")
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != tsSDKVersion {
		t.Fatalf("interop/ts/node_modules has @modelcontextprotocol/sdk %q (%v), want %s: run interop/ts/install.sh",
			meta.Version, err, tsSDKVersion)
	}
	return node
}

// The official TypeScript SDK client, run by Node against lifeline: the
// script's own checks (one JSON line per step) and what the server saw.
func TestTypeScriptClient(t *testing.T) {
	node := nodeAndSDK(t)
	h := start(t, streamable.Config{HeartbeatInterval: 200 * time.Millisecond})

	steps, order := runNodeScript(t, node, "client.mjs", h.URL)

	want := []string{"connect", "list_tools", "echo", "notify", "sampling", "ping", "terminate", "after_terminate",
		"connect_b", "notify_b", "forget", "after_404", "get_reconnect", "after_404_again",
		"recover_same_client", "recover_new_client", "done"}
	checkSteps(t, steps, order, want)
	if t.Failed() {
		t.FailNow()
	}

	// What each step saw, against what lifeline is meant to answer.
	a, b := steps["connect"], steps["connect_b"]
	sidA, sidB := a.str("sessionId"), b.str("sessionId")
	if v := a.str("protocolVersion"); v != "2025-11-25" {
		t.Errorf("negotiated protocol version %q, want 2025-11-25", v)
	}
	if n := steps["notify"]["data"].(map[string]any)["text"]; n != "ts-note" || steps["notify"].str("level") != "info" {
		t.Errorf("notification %v", steps["notify"])
	}
	onGET := h.Wire.find(func(ex exchange) bool {
		return ex.Method == http.MethodGet && ex.SessionID == sidA && strings.Contains(ex.Body, "ts-note")
	})
	onPOST := h.Wire.find(func(ex exchange) bool {
		return ex.Method == http.MethodPost && strings.Contains(ex.Body, "ts-note")
	})
	if len(onGET) != 1 || len(onPOST) != 0 {
		t.Errorf("the notification went out on %d GET and %d POST answers, want 1 and 0", len(onGET), len(onPOST))
	}
	if got := h.Wire.find(func(ex exchange) bool {
		return ex.RPC == "tools/call" && strings.Contains(ex.Request, "ts-prompt") && strings.Contains(ex.Body, "sampling/createMessage")
	}); len(got) != 1 {
		t.Errorf("the sampling request did not go out on the tools/call's own answer")
	}
	testutil.Eventually(t, wait, "the sampling answer's POST to be answered 202", func() bool {
		got := h.Wire.find(func(ex exchange) bool {
			return ex.RPC == "response" && ex.SessionID == sidA && strings.Contains(ex.Request, "sampled: ts-prompt")
		})
		return len(got) == 1 && got[0].Status == http.StatusAccepted
	})
	if got := h.Wire.find(func(ex exchange) bool {
		return ex.RPC == "response" && ex.SessionID == sidA && strings.Contains(ex.Request, `"result":{}`)
	}); len(got) == 0 || got[0].Status != http.StatusAccepted {
		t.Errorf("ping answers POSTed: %v, want 202", got)
	}
	if got := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodDelete && ex.SessionID == sidA }); len(got) != 1 ||
		got[0].Status != http.StatusOK || got[0].Version != "2025-11-25" {
		t.Errorf("terminateSession's DELETEs: %v, want one answered 200", got)
	}
	if st := steps["terminate"]; st["sessionIdAfter"] != nil {
		t.Errorf("the transport kept session id %v after terminateSession", st["sessionIdAfter"])
	}
	// After terminateSession the transport sends no Mcp-Session-Id: 400.
	if st := steps["after_terminate"]; st.num("code") != http.StatusBadRequest || !strings.Contains(st.str("error"), "Mcp-Session-Id header is required") {
		t.Errorf("request after terminateSession: %v, want a 400 naming the missing Mcp-Session-Id", st)
	}
	// After the server forgot session B: 404, the stale id kept, the GET
	// reconnect refused too, and no recovery without a new connect.
	for _, name := range []string{"after_404", "after_404_again"} {
		st := steps[name]
		if st.num("code") != http.StatusNotFound || !strings.Contains(st.str("error"), "Session not found") || st["sessionIdKept"] != true {
			t.Errorf("%s: %v, want code 404, lifeline's \"Session not found\" and the stale id kept", name, st)
		}
	}
	gets := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodGet && ex.SessionID == sidB })
	if len(gets) < 2 || gets[0].Status != http.StatusOK || gets[1].Status != http.StatusNotFound {
		t.Errorf("GETs of the forgotten session: %v, want the stream (200) then a reconnect refused (404)", gets)
	}
	for _, name := range []string{"recover_same_client", "recover_new_client"} {
		if sid := steps[name].str("sessionId"); sid == "" || sid == sidB {
			t.Errorf("%s: session %q, want a new one", name, sid)
		}
	}
	t.Logf("wire:\n%s", h.Wire.dump(""))
}
