package streamable_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// toolSendBurst sends count notifications of about size bytes on its own
// request's stream and reports, through sent, how many were refused.
func toolSendBurst(count, size int, sent chan<- string) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("send_burst"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			refused := 0
			pad := strings.Repeat("x", size)
			for i := range count {
				err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
					map[string]any{"level": "info", "data": fmt.Sprintf("%d %s", i, pad)})
				if err != nil {
					refused++
				}
			}
			sent <- fmt.Sprintf("sent %d, refused %d", count, refused)
			return mcp.NewToolResultText("done"), nil
		})
	}
}

// A tool that sends faster than its client reads waits for room in its
// request's small queue; when the client has stopped reading altogether the
// wait is bounded (the stall threshold), the stream is cut, and the session
// serves on. Without an event log the rest of the burst is refused; with
// one, the response may be let go of once the cut stream has given out an
// event id (its client resumes), and the rest recorded instead of refused:
// either way the tool finishes in time.
func TestStalledPOSTReaderBoundsABurstingTool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noLog bool
	}{{"no-event-log", true}, {"event-log", false}} {
		t.Run(tc.name, func(t *testing.T) { stalledReaderBoundsABurst(t, tc.noLog) })
	}
}

func stalledReaderBoundsABurst(t *testing.T, noLog bool) {
	const count, size = 200, 32 << 10 // 6.4 MiB, far past the socket buffers
	sent := make(chan string, 1)
	// A write timeout far past the test's deadline: only the bounded wait (1 s)
	// and the squeeze it leads to can end the burst in time.
	r := newRig(t, streamable.Config{WriteTimeout: time.Minute, DisableEventLog: noLog}, toolSendBurst(count, size, sent))
	c := r.session()
	ctx := testutil.Context(t, wait)
	sr, err := testutil.DialStalled(ctx, r.ts.URL, "POST", map[string]string{
		"Accept":               "application/json, text/event-stream",
		"Content-Type":         "application/json",
		"Mcp-Session-Id":       c.SessionID,
		"MCP-Protocol-Version": "2025-11-25",
	}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_burst"}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	select {
	case got := <-sent:
		// The refusal is counted when the bounded wait ends with the queue
		// still full: the send that follows may still find room, as the cut
		// stream's writer drains the queue (under load, every one may).
		if refused := r.h.Stats().RefusedMessages; noLog && strings.HasSuffix(got, "refused 0") && refused == 0 {
			t.Fatalf("%s, none counted refused: a client that never reads took the whole burst", got)
		}
	case <-ctx.Done():
		t.Fatal("the tool is still sending: its wait for room is not bounded")
	}
	// The request ends (its stream was cut) and the session serves on.
	testutil.Eventually(t, wait, "the stalled request to end", func() bool { return r.h.Stats().PostStreams == 0 })
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "still here"})
	if err != nil {
		t.Fatal(err)
	}
	if last, err := resp.Last(); err != nil || !strings.Contains(string(last.Result), "still here") {
		t.Fatalf("echo after the stalled call: %+v, %v", last, err)
	}
}

// A client that reads gets every notification of a burst far larger than
// the request's queue: the tool waits for room instead of losing any.
func TestBurstLargerThanTheRequestQueueArrivesWhole(t *testing.T) {
	const count = 300
	sent := make(chan string, 1)
	r := newRig(t, streamable.Config{RequestQueueSize: 4}, toolSendBurst(count, 16, sent))
	c := r.session()
	resp, err := c.CallTool(testutil.Context(t, wait), "send_burst", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-sent; got != fmt.Sprintf("sent %d, refused 0", count) {
		t.Fatalf("tool: %s", got)
	}
	notes := 0
	for _, m := range resp.Messages {
		if m.IsNotification() {
			notes++
		}
	}
	if notes != count {
		t.Fatalf("%d notifications on the call's response, want %d", notes, count)
	}
}
