package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func bbSamplingServer() *server.MCPServer {
	srv := server.NewMCPServer("bb-sampling", "1", server.WithToolCapabilities(true), server.WithLogging())
	srv.AddTool(mcp.NewTool("bb_sample", mcp.WithNumber("timeout_ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d := time.Duration(req.GetInt("timeout_ms", 100)) * time.Millisecond
			sctx, cancel := context.WithTimeout(streamable.OnSessionStream(ctx, srv), d)
			defer cancel()
			_, err := srv.RequestSampling(sctx, mcp.CreateMessageRequest{
				CreateMessageParams: mcp.CreateMessageParams{
					Messages: []mcp.SamplingMessage{{
						Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "hello"},
					}},
					MaxTokens: 5,
				},
			})
			if err != nil {
				return mcp.NewToolResultText("sampling failed: " + err.Error()), nil
			}
			return mcp.NewToolResultText("sampled"), nil
		})
	srv.AddTool(mcp.NewTool("bb_mark", mcp.WithString("text")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			session := server.ClientSessionFromContext(ctx)
			if session == nil {
				return mcp.NewToolResultError("no session"), nil
			}
			err := srv.SendNotificationToSpecificClient(session.SessionID(), "notifications/message", map[string]any{
				"level": "info", "data": req.GetString("text", ""),
			})
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText("marked"), nil
		})
	return srv
}

func bbLogData(m testutil.Message) string {
	var p struct {
		Data any `json:"data"`
	}
	_ = json.Unmarshal(m.Params, &p)
	s, _ := p.Data.(string)
	return s
}

func TestBlackboxAbandonedSamplingNotDeliveredLater(t *testing.T) {
	rig := bbStart(t, bbSamplingServer(), streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	// No GET stream yet: the request waits in the session's queue until its
	// caller gives up.
	resp, err := c.CallTool(ctx, "bb_sample", map[string]any{"timeout_ms": 100})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("bb_sample: %v %+v", err, resp)
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	text := bbToolText(t, m)
	if !strings.HasPrefix(text, "sampling failed") {
		t.Fatalf("sampling did not fail with no client to answer it: %q", text)
	}
	t.Logf("tool saw: %s; stats now %+v", text, rig.h.Stats())

	st, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Status != http.StatusOK {
		t.Fatalf("GET: status %d: %s", st.Status, st.Body)
	}
	if r, err := c.CallTool(ctx, "bb_mark", map[string]any{"text": "marker-1"}); err != nil || r.Status != http.StatusOK {
		t.Fatalf("bb_mark: %v %+v", err, r)
	}
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		m, err := st.NextMatching(readCtx, func(m testutil.Message) bool { return m.Method != "ping" })
		if err != nil {
			t.Fatalf("waiting for the marker on the GET stream: %v", err)
		}
		if m.Method == "sampling/createMessage" {
			t.Errorf("abandoned sampling request delivered on a GET stream opened afterwards: id %s", m.ID)
			continue
		}
		if m.Method == "notifications/message" && bbLogData(m) == "marker-1" {
			break
		}
		t.Logf("also on the stream: %s %s %.200s", m.Method, m.ID, m.Params)
	}
	t.Logf("stats after the marker: %+v", rig.h.Stats())
}

func TestBlackboxAbandonedSamplingIsCancelled(t *testing.T) {
	rig := bbStart(t, bbSamplingServer(), streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	st, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Status != http.StatusOK {
		t.Fatalf("GET: status %d: %s", st.Status, st.Body)
	}
	call := bbPostAsync(ctx, c, bbToolCall("s-1", "bb_sample", map[string]any{"timeout_ms": 1000}, nil))

	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := st.NextMatching(readCtx, func(m testutil.Message) bool { return m.Method == "sampling/createMessage" })
	if err != nil {
		t.Fatalf("sampling request not written on the GET stream: %v", err)
	}
	wantID := bbCompact(req.ID)
	// Not answered: the caller gives up after 1 s.
	canc, err := st.NextMatching(readCtx, func(m testutil.Message) bool { return m.Method != "ping" })
	if err != nil {
		t.Fatalf("no notifications/cancelled after the caller gave up: %v", err)
	}
	if canc.Method != "notifications/cancelled" {
		t.Fatalf("next message is %s %.200s, want notifications/cancelled", canc.Method, canc.Params)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := json.Unmarshal(canc.Params, &p); err != nil {
		t.Fatalf("cancelled params %s: %v", canc.Params, err)
	}
	if got := bbCompact(p.RequestID); got != wantID {
		t.Errorf("notifications/cancelled params.requestId = %s, want %s", got, wantID)
	}
	res := bbAwait(t, call, 10*time.Second, "bb_sample answer")
	if res.err != nil || res.resp.Status != http.StatusOK {
		t.Fatalf("bb_sample: %v %+v", res.err, res.resp)
	}
	m, err := res.resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	if text := bbToolText(t, m); !strings.HasPrefix(text, "sampling failed") {
		t.Errorf("tool result %q, want a failed sampling", text)
	}
}

// ---------------------------------------------------------------- 4: trickled bodies
