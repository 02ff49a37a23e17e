package streamable_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestInitializeCreatesSessionWithVisibleASCIIID(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.client()
	m, err := c.Initialize(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Result) == 0 {
		t.Fatalf("initialize result empty: %+v", m)
	}
	if len(c.SessionID) < 32 {
		t.Fatalf("session id %q is too short to be unguessable", c.SessionID)
	}
	for _, b := range []byte(c.SessionID) {
		if b < 0x21 || b > 0x7e {
			t.Fatalf("session id %q has byte %#x outside visible ASCII", c.SessionID, b)
		}
	}
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("Sessions = %d, want 1", got)
	}
	// The session works: a tool call on it is served.
	resp, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
	// Only initialize's answer names the session (as the specification
	// has it); later answers do not repeat it.
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" {
		t.Fatalf("tools/call answer carries Mcp-Session-Id %q, want none", got)
	}
	last, err := resp.Last()
	if err != nil || !strings.Contains(string(last.Result), `"hi"`) {
		t.Fatalf("echo result %s, err %v", last.Result, err)
	}
}

func TestSessionIDsAreUnique(t *testing.T) {
	r := newRig(t, streamable.Config{})
	seen := map[string]bool{}
	for range 50 {
		c := r.session()
		if seen[c.SessionID] {
			t.Fatalf("session id %q issued twice", c.SessionID)
		}
		seen[c.SessionID] = true
	}
}

func TestUnknownSessionGets404OnEveryMethod(t *testing.T) {
	r := newRig(t, streamable.Config{})
	good := r.session()
	for _, id := range []string{"no-such-session", "00000000-0000-4000-8000-000000000000"} {
		c := r.client()
		c.SessionID = id
		c.ProtocolVersion = testutil.ProtocolVersion
		ctx := testutil.Context(t, wait)
		post, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "POST", post.Status, post.Body)
		get, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "GET", get.Status, get.Body)
		del, err := c.Delete(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantNotFound(t, "DELETE", del.Status, del.Body)
	}
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("unknown ids created sessions: Sessions = %d, want 1", got)
	}
	// The real session is untouched.
	resp, err := good.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "still here"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "good session", resp.Status, http.StatusOK, resp.Body)
}

// wantNotFound checks a 404 with the JSON-RPC "Session not found" body.
func wantNotFound(t *testing.T, what string, status int, body []byte) {
	t.Helper()
	wantStatus(t, what, status, http.StatusNotFound, body)
	var m testutil.Message
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("%s: 404 body %q is not a JSON-RPC error", what, body)
	}
	if m.Error.Code != -32001 || m.Error.Message != "Session not found" {
		t.Fatalf("%s: error %+v, want -32001 Session not found", what, *m.Error)
	}
}

func TestMissingSessionIDGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	r.session()
	c := r.client()
	ctx := testutil.Context(t, wait)
	post, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "POST", post.Status, http.StatusBadRequest, post.Body, "Mcp-Session-Id")
	get, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "GET", get.Status, http.StatusBadRequest, get.Body, "Mcp-Session-Id")
	del, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "DELETE", del.Status, http.StatusBadRequest, del.Body, "Mcp-Session-Id")
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("Sessions = %d, want 1", got)
	}
}

func TestInitializeWithSessionIDGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "initialize with a session id", resp.Status, http.StatusBadRequest, resp.Body, "initialize")
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("Sessions = %d, want 1", got)
	}
}

// wantRPCError checks the status and a JSON-RPC error body whose message
// mentions what.
func wantRPCError(t *testing.T, what string, status, want int, body []byte, mention string) {
	t.Helper()
	wantStatus(t, what, status, want, body)
	var m testutil.Message
	if err := json.Unmarshal(body, &m); err != nil || m.Error == nil {
		t.Fatalf("%s: body %q is not a JSON-RPC error", what, body)
	}
	if !strings.Contains(m.Error.Message, mention) {
		t.Fatalf("%s: error message %q does not mention %q", what, m.Error.Message, mention)
	}
}
