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

// mcp-go calls UpgradeToSSEWhenReceiveNotification, then
// NotificationChannel, then sends. A stream that claims the session between
// the two still gets the send: the claim makes the full queues once the
// session has its small channel, and the stream reads both.
func TestSendRacingAnEmptyClaimIsDelivered(t *testing.T) {
	mcpServer := server.NewMCPServer("t", "1")
	h := New(mcpServer, Config{HeartbeatInterval: Disabled, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		ts.Close()
	})
	ctx := testutil.Context(t, 10*time.Second)
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	sess := h.sessions[c.SessionID]
	h.mu.Unlock()

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
