package streamable_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A broadcast to sessions that never opened a stream costs each about what
// it holds, not two QueueSize queues (some 40 KiB).
func TestBroadcastToSessionsWithoutStreamHoldsOnlyWhatItSent(t *testing.T) {
	const sessions = 200
	r := newRig(t, streamable.Config{})
	for range sessions {
		r.session()
	}
	before := heapBytes()
	r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
	grew := heapGrowth(before)
	per := grew / sessions
	t.Logf("heap per session without a stream after one broadcast: %d bytes", per)
	if per > 4<<10 {
		t.Fatalf("one broadcast costs %d bytes per session without a stream", per)
	}
	if q := r.h.Stats().QueuedMessages; q != sessions {
		t.Fatalf("Stats.QueuedMessages = %d, want %d", q, sessions)
	}
}

// What a session without a stream is sent (more than its first few slots)
// reaches its next stream once each, in order, ahead of what follows.
func TestHeldMessagesReachTheNextStreamInOrder(t *testing.T) {
	r := newRig(t, streamable.Config{})
	clients := []*testutil.Client{r.session(), r.session()}
	const held = 50
	for i := range held {
		r.mcp.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": fmt.Sprint("held-", i)})
	}
	for _, c := range clients {
		s := r.stream(c)
		r.mcp.SendNotificationToAllClients("notifications/message", map[string]any{"level": "info", "data": "after"})
		ctx := testutil.Context(t, wait)
		for i := range held + 1 {
			m, err := s.NextMatching(ctx, notPing)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`"held-%d"`, i)
			if i == held {
				want = `"after"`
			}
			if !strings.Contains(string(m.Params), want) {
				t.Fatalf("message %d: %s, want %s", i, m.Params, want)
			}
		}
		s.Close()
		r.quiesce()
	}
}
