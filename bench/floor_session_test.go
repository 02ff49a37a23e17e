package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The floor gives a 2026-07-28 tool call no session; with FloorSession the
// tool finds one in its context (the notify tool answers "sent", not its
// "no session" error; its send by id fails, the session not being
// registered with MCPServer: TestFloorSessionIsOneMCPServerUses checks a
// send to the request's client). A session-era request gets none either
// way.
func TestFloorSessionGivesTheToolASession(t *testing.T) {
	for _, withSession := range []bool{false, true} {
		p, err := StartPeer(Floor, Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, FloorSession: withSession})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		for _, modern := range []bool{false, true} {
			got := floorToolAnswer(t, p.JSONURL, ToolNotify, modern, nil)
			want := "no session"
			if withSession && modern {
				want = "sent"
			}
			if got != want {
				t.Errorf("FloorSession %v, 2026-07-28 %v: the notify tool answered %q, want %q", withSession, modern, got, want)
			}
		}
	}
}

// The session the floor gives a 2026-07-28 request is one MCPServer runs
// the request on as on any transport's: initialized, holding the
// capabilities the request's _meta declares, and taking what the tool
// sends to its client.
func TestFloorSessionIsOneMCPServerUses(t *testing.T) {
	s := server.NewMCPServer("probe", "1.0.0", server.WithToolCapabilities(true), server.WithLogging())
	s.AddTool(mcp.NewTool("probe"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
		if !ok {
			return mcp.NewToolResultText("no session with client info"), nil
		}
		sent := s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "x"})
		return mcp.NewToolResultText(fmt.Sprintf("initialized=%v roots=%v sent=%v",
			cs.Initialized(), cs.GetClientCapabilities().Roots != nil, sent)), nil
	})
	srv := httptest.NewServer(floorHandler{s: s, sessions: &floorSessions{}})
	t.Cleanup(srv.Close)
	meta := map[string]any{mcp.MetaKeyClientCapabilities: map[string]any{"roots": map[string]any{}}}
	got := floorToolAnswer(t, srv.URL, "probe", true, meta)
	if want := "initialized=true roots=true sent=<nil>"; got != want {
		t.Errorf("the probe tool saw %q, want %q", got, want)
	}
}

// floorToolAnswer calls tool (no arguments) on url, in 2026-07-28 when
// modern, with meta merged into its _meta, else as a session-era request
// without a session, and returns the text of its result.
func floorToolAnswer(t *testing.T, url, tool string, modern bool, meta map[string]any) string {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	if meta != nil {
		params["_meta"] = meta
	}
	resp := floorPost(t, url, params, modern, "")
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || len(answer.Result.Content) != 1 {
		t.Fatalf("status %d: the answer does not decode to one content item: %v", resp.StatusCode, err)
	}
	return answer.Result.Content[0].Text
}
