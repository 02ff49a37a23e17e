package streamable

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A send that fetched the session's small channel just before its stream
// made the full queues lands there afterwards (mcp-go fetches the channel,
// then sends). The stream still delivers it, in order with what the same
// sender sends next, with or without a later send.
func TestSendRacingTheFullQueuesIsDelivered(t *testing.T) {
	h, c, sess := initializedSession(t)
	mcpServer := h.mcp
	ctx := testutil.Context(t, 10*time.Second)
	note := func(data string) mcp.JSONRPCNotification {
		return mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{
			Method: "notifications/message",
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": "info", "data": data}},
		}}
	}
	send := func(data string) {
		if err := mcpServer.SendNotificationToSpecificClient(c.SessionID, "notifications/message",
			map[string]any{"level": "info", "data": data}); err != nil {
			t.Fatal(err)
		}
	}

	send("held")
	early := sess.NotificationChannel() // no stream yet: the small channel
	s, err := c.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if sess.q.Load() == nil {
		t.Fatal("the stream took no full queues for what was held")
	}
	early <- note("late-1") // after the full queues were made
	send("next")            // moves late-1 on first
	early <- note("late-2") // and nothing is sent after this one
	for _, want := range []string{"held", "late-1", "next", "late-2"} {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.Method != "ping" })
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if !strings.Contains(string(m.Params), `"`+want+`"`) {
			t.Fatalf("got %s, want %s", m.Params, want)
		}
	}
}

// mcp-go calls UpgradeToSSEWhenReceiveNotification, then
// NotificationChannel, then sends. A stream that claims the session between
// the two still gets the send: the claim makes the full queues once the
// session has its small channel, and the stream reads both.
func TestSendRacingAnEmptyClaimIsDelivered(t *testing.T) {
	_, c, sess := initializedSession(t)
	ctx := testutil.Context(t, 10*time.Second)

	// What mcp-go's sendNotificationToSpecificClient does, with the stream
	// claiming the session between its fetching the channel and its send.
	sess.UpgradeToSSEWhenReceiveNotification()
	early := sess.NotificationChannel() // no stream yet: small
	s, err := c.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	select {
	case early <- mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{
		Method: "notifications/message",
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": "info", "data": "stranded"}},
	}}:
	default:
		t.Fatal("send refused")
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := s.NextMatching(wctx, func(m testutil.Message) bool { return m.Method != "ping" })
	if err != nil {
		t.Fatalf("the notification never reached the open stream (q made: %v, queued: %d): %v",
			sess.q.Load() != nil, sess.queued(), err)
	}
	if !strings.Contains(string(m.Params), "stranded") {
		t.Fatalf("got %s", m.Params)
	}
}

// initializedSession serves a bare MCPServer through a Handler on a
// loopback server, initializes a raw client, and returns the session the
// handler made for it.
func initializedSession(t *testing.T) (*Handler, *testutil.Client, *session) {
	t.Helper()
	h := New(server.NewMCPServer("t", "1"), Config{HeartbeatInterval: Disabled, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(testutil.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h, c, h.sessions[c.SessionID]
}
