package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// bigMessage is the size of the large message in these tests, and
// serverSendBuffer the kernel send buffer of the server's connections:
// most of the message's write has to wait for the client.
const (
	bigMessage       = 4 << 20
	serverSendBuffer = 256 << 10
)

// bigNoteTool adds "big_note", which sends the caller's session one
// notification with "bytes" bytes of payload (seq 0), then a small one
// (seq 1) queued behind it.
func bigNoteTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("big_note", mcp.WithNumber("bytes")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := server.ClientSessionFromContext(ctx).SessionID()
		for seq, payload := range []string{strings.Repeat("x", req.GetInt("bytes", 0)), "behind"} {
			err := s.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{
				"level": "info", "data": map[string]any{"seq": seq, "payload": payload}})
			if err != nil {
				return nil, fmt.Errorf("send seq %d: %w", seq, err)
			}
		}
		return mcp.NewToolResultText("sent"), nil
	})
}

// payloadOf returns a big_note notification's seq and payload length.
func payloadOf(t *testing.T, m testutil.Message) (seq, size int) {
	t.Helper()
	var p struct {
		Data struct {
			Seq     int    `json:"seq"`
			Payload string `json:"payload"`
		} `json:"data"`
	}
	if m.Method != "notifications/message" || json.Unmarshal(m.Params, &p) != nil {
		t.Fatalf("not a big_note notification: %.200s", m.Params)
	}
	return p.Data.Seq, len(p.Data.Payload)
}

// sendBig calls big_note on c's session.
func sendBig(t *testing.T, c *testutil.Client) {
	t.Helper()
	resp, err := c.CallTool(testutil.Context(t, wait), "big_note", map[string]any{"bytes": bigMessage})
	if err != nil {
		t.Fatal(err)
	}
	if last, err := resp.Last(); err != nil || !strings.Contains(string(last.Result), "sent") {
		t.Fatalf("big_note: %s %v", resp.Body, err)
	}
}

// TestSlowSteadyReaderGetsALargeMessageAndWhatIsBehindIt: a client that
// reads steadily, but too slowly for the whole message to go out within one
// write timeout, still gets it (progress extends the deadline), once, and
// then the message queued behind it.
func TestSlowSteadyReaderGetsALargeMessageAndWhatIsBehindIt(t *testing.T) {
	r := newRigOn(t, streamable.Config{WriteTimeout: time.Second}, smallSendBuffer(serverSendBuffer), bigNoteTool)
	c := r.session()
	// 1 MiB/s: the 4 MiB message takes about 4 s, four write timeouts.
	th := testutil.NewThrottle(1 << 20)
	slow := &testutil.Client{URL: c.URL, HTTP: th.Client(), SessionID: c.SessionID, ProtocolVersion: c.ProtocolVersion}
	ctx := testutil.Context(t, 60*time.Second)
	s := r.stream(slow)
	sendBig(t, c)

	var perStream []int64 // bytes the client read on each stream
	read := th.BytesRead()
	bigs := 0
	for {
		m, err := s.NextMatching(ctx, notPing)
		if err != nil {
			// The stream failed (a partly written message does not parse):
			// reconnect, as a client does, a bounded number of times.
			perStream = append(perStream, th.BytesRead()-read)
			read = th.BytesRead()
			s.Close()
			if ctx.Err() != nil || len(perStream) == 4 {
				t.Fatalf("after %d streams (bytes read on each: %v) the message behind the large one "+
					"never arrived: the large one wedges the queue (%v)", len(perStream), perStream, err)
			}
			s = r.stream(slow)
			continue
		}
		seq, size := payloadOf(t, m)
		if seq == 1 {
			break
		}
		if size != bigMessage {
			t.Fatalf("large message with %d bytes of payload, want %d", size, bigMessage)
		}
		bigs++
	}
	if bigs != 1 || len(perStream) != 0 {
		t.Fatalf("the large message arrived %d times, over %d failed streams (bytes read on each: %v)",
			bigs, len(perStream), perStream)
	}
	if st := r.h.Stats(); st.QueuedMessages != 0 || st.DroppedMessages != 0 {
		t.Fatalf("after delivery: %+v", st)
	}
}

// TestUndeliverableMessageIsDroppedAfterBoundedAttempts: a message whose
// write fails on every stream (here: clients that never read) is dropped
// after maxWriteAttempts, counted, and what was queued behind it flows.
func TestUndeliverableMessageIsDroppedAfterBoundedAttempts(t *testing.T) {
	r := newRigOn(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, smallSendBuffer(serverSendBuffer), bigNoteTool)
	c := r.session()
	ctx := testutil.Context(t, wait)
	const attempts = 3 // streamable's maxWriteAttempts
	for i := range attempts {
		sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
			t.Fatalf("stalled GET %d: %q, %v", i, status, err)
		}
		if i == 0 {
			sendBig(t, c)
		}
		// The large message's write times out, the handler exits.
		testutil.Eventually(t, wait, "the stalled stream's handler to exit", func() bool {
			return r.h.Stats().GetStreams == 0
		})
		sr.Close()
	}
	if st := r.h.Stats(); st.DroppedMessages != 1 || st.QueuedMessages != 1 {
		t.Fatalf("after %d failed attempts: %+v, want the large message dropped and one message queued", attempts, st)
	}
	s := r.stream(c)
	m, err := s.NextMatching(ctx, notPing)
	if err != nil {
		t.Fatal(err)
	}
	if seq, size := payloadOf(t, m); seq != 1 {
		t.Fatalf("first message on the next stream: seq %d (%d bytes), want the one behind the dropped message", seq, size)
	}
	if st := r.h.Stats(); st.DroppedMessages != 1 || st.Sessions != 1 {
		t.Fatalf("after delivery: %+v", st)
	}
}

// sizedResultTool adds "big_result", which answers with "bytes" bytes of text.
func sizedResultTool(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("big_result", mcp.WithNumber("bytes")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("y", req.GetInt("bytes", 0))), nil
	})
}

// TestSlowSteadyReaderGetsALargeJSONAnswer: a POST answered with a large
// JSON body (respondJSON) reaches a slow but steady reader whole too.
func TestSlowSteadyReaderGetsALargeJSONAnswer(t *testing.T) {
	r := newRigOn(t, streamable.Config{WriteTimeout: time.Second, HeartbeatInterval: streamable.Disabled},
		smallSendBuffer(serverSendBuffer), sizedResultTool)
	c := r.session()
	th := testutil.NewThrottle(1 << 20)
	slow := &testutil.Client{URL: c.URL, HTTP: th.Client(), SessionID: c.SessionID, ProtocolVersion: c.ProtocolVersion}
	resp, err := slow.CallTool(testutil.Context(t, 60*time.Second), "big_result", map[string]any{"bytes": bigMessage})
	if err != nil {
		t.Fatalf("after %d bytes read: %v", th.BytesRead(), err)
	}
	wantStatus(t, "big_result", resp.Status, 200, nil)
	last, err := resp.Last()
	if err != nil {
		t.Fatalf("after %d bytes read: %v", th.BytesRead(), err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(last.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("result: %v %.200s", err, last.Result)
	}
	if text, ok := res.Content[0].(mcp.TextContent); !ok || len(text.Text) != bigMessage {
		t.Fatalf("the answer's text is not whole: %T", res.Content[0])
	}
}
