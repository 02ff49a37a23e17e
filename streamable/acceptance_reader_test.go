package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestBlackboxSlowSteadyReaderGetsLargeMessage(t *testing.T) {
	const size = 2 << 20
	srv := server.NewMCPServer("bb-slow", "1", server.WithToolCapabilities(true), server.WithLogging())
	srv.AddTool(mcp.NewTool("bb_big_notify", mcp.WithNumber("bytes")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			session := server.ClientSessionFromContext(ctx)
			if session == nil {
				return mcp.NewToolResultError("no session"), nil
			}
			id := session.SessionID()
			for seq, payload := range []string{strings.Repeat("x", req.GetInt("bytes", 0)), "after"} {
				if err := srv.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{
					"level": "info", "data": map[string]any{"seq": seq, "payload": payload},
				}); err != nil {
					return mcp.NewToolResultError(fmt.Sprintf("notification %d: %v", seq, err)), nil
				}
			}
			return mcp.NewToolResultText("sent"), nil
		})
	rig := bbStart(t, srv, streamable.Config{WriteTimeout: time.Second}, nil)
	ctx := testutil.Context(t, 60*time.Second)
	c := rig.session(t, ctx)

	throttle := testutil.NewThrottle(512 << 10)
	slowHTTP := throttle.Client()
	defer slowHTTP.CloseIdleConnections()
	slow := testutil.NewClient(rig.url)
	slow.HTTP = slowHTTP
	slow.SessionID, slow.ProtocolVersion = c.SessionID, c.ProtocolVersion
	st, err := slow.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", st.Status, st.Body)
	}

	resp, err := c.CallTool(ctx, "bb_big_notify", map[string]any{"bytes": size})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("bb_big_notify: %v %+v", err, resp)
	}
	if m, _ := resp.Last(); bbToolText(t, m) != "sent" {
		t.Fatalf("bb_big_notify: %s", m.Result)
	}

	start := time.Now()
	readCtx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	for seq, want := range []int{size, len("after")} {
		m, err := st.NextMatching(readCtx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("message %d not received on the first stream after %v (%d bytes read; stats %+v): %v",
				seq, time.Since(start), throttle.BytesRead(), rig.h.Stats(), err)
		}
		var p struct {
			Data struct {
				Seq     int    `json:"seq"`
				Payload string `json:"payload"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if p.Data.Seq != seq || len(p.Data.Payload) != want {
			t.Fatalf("message %d: got seq %d with %d bytes of payload, want seq %d with %d", seq, p.Data.Seq, len(p.Data.Payload), seq, want)
		}
	}
	t.Logf("2 MiB message and the one after received in %v (%d bytes read)", time.Since(start), throttle.BytesRead())
	select {
	case <-st.Ended():
		t.Errorf("the server ended the slow reader's stream")
	default:
	}
	if s := rig.h.Stats(); s.DroppedMessages != 0 || s.GetStreams != 1 {
		t.Errorf("stats %+v: want no dropped message and the one stream still open", s)
	}
}

// ---------------------------------------------------------------- 8: ids on error answers
