package streamable_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// seqOf returns the seq of a lifeline_notify_session notification.
func seqOf(t *testing.T, m testutil.Message) int {
	t.Helper()
	var p struct {
		Data struct {
			Seq int `json:"seq"`
		} `json:"data"`
	}
	if m.Method != "notifications/message" || json.Unmarshal(m.Params, &p) != nil {
		t.Fatalf("not a session notification: %+v", m)
	}
	return p.Data.Seq
}

func TestSessionNotificationsGoOnGetStreamInOrder(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 50, "bytes": 100})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
	// (The answer may be SSE with keep-alive comments on a slow machine, but
	// it carries the response alone.)
	if len(resp.Messages) != 1 {
		t.Fatalf("session notifications leaked onto the POST response: %d messages", len(resp.Messages))
	}
	for want := range 50 {
		m, err := s.NextMatching(ctx, notPing)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(t, m); got != want {
			t.Fatalf("notification seq %d, want %d", got, want)
		}
	}
}

func TestRequestNotificationsGoOnThePostStream(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	resp, err := c.Call(ctx, "tools/call", map[string]any{
		"name": "lifeline_progress", "arguments": map[string]any{"steps": 3},
		"_meta": map[string]any{"progressToken": "tok-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
	if !resp.IsSSE() {
		t.Fatalf("a request that notifies was not upgraded to SSE")
	}
	if got := resp.Header.Get("Mcp-Session-Id"); got != "" {
		t.Fatalf("SSE answer carries Mcp-Session-Id %q, want none (only initialize's does)", got)
	}
	var progress, logs int
	for _, m := range resp.Messages[:len(resp.Messages)-1] {
		switch m.Method {
		case "notifications/progress":
			progress++
		case "notifications/message":
			logs++
		default:
			t.Fatalf("unexpected message on the POST stream: %+v", m)
		}
	}
	// Every notification sent before the response is delivered, the last
	// one included.
	if progress != 3 || logs != 3 {
		t.Fatalf("got %d progress and %d log notifications, want 3 and 3", progress, logs)
	}
	last, _ := resp.Last()
	if len(last.ID) == 0 || last.Result == nil {
		t.Fatalf("last message is not the response: %+v", last)
	}
	// Nothing of the request went on the GET stream: the next non-ping
	// message there is a marker sent afterwards.
	if _, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 1}); err != nil {
		t.Fatal(err)
	}
	m, err := s.NextMatching(ctx, notPing)
	if err != nil {
		t.Fatal(err)
	}
	if seqOf(t, m) != 0 {
		t.Fatalf("GET stream carried %+v before the marker", m)
	}
}

func TestLastNotificationBeforeResponseIsNeverDropped(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	ctx := testutil.Context(t, wait)
	for i := range 200 {
		resp, err := c.Call(ctx, "tools/call", map[string]any{
			"name": "lifeline_progress", "arguments": map[string]any{"steps": 1},
			"_meta": map[string]any{"progressToken": i},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Messages) != 3 {
			t.Fatalf("call %d: %d messages, want progress, log and response", i, len(resp.Messages))
		}
	}
}

func TestQueuedMessagesWaitForTheNextStream(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	ctx := testutil.Context(t, wait)
	first := r.stream(c)
	if _, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 5}); err != nil {
		t.Fatal(err)
	}
	for want := range 5 {
		m, err := first.NextMatching(ctx, notPing)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(t, m); got != want {
			t.Fatalf("seq %d, want %d", got, want)
		}
	}
	first.Close()
	r.quiesce()
	// With no stream open, messages stay queued for the next stream.
	if _, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 20}); err != nil {
		t.Fatal(err)
	}
	second := r.stream(c)
	for want := range 20 {
		m, err := second.NextMatching(ctx, notPing)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(t, m); got != want {
			t.Fatalf("after handoff: seq %d, want %d", got, want)
		}
	}
}

func TestQueueOverflowWithoutStreamRefusesTheRest(t *testing.T) {
	r := newRig(t, streamable.Config{QueueSize: 8})
	c := r.session()
	ctx := testutil.Context(t, wait)
	// No stream is open: the queue fills and the rest is refused, which the
	// tool reports (the sender learns of it; nothing vanishes silently).
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 20})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := resp.Last()
	if !json.Valid(last.Result) || !containsAll(string(last.Result), "sent 8 notifications", "12 refused") {
		t.Fatalf("tool result %s, want 8 sent and 12 refused", last.Result)
	}
	// A broadcast (mcp-go swallows its refusals) is counted all the same.
	r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
	if got := r.h.Stats().RefusedMessages; got != 13 {
		t.Fatalf("RefusedMessages = %d, want 13", got)
	}
	s := r.stream(c)
	for want := range 8 {
		m, err := s.NextMatching(ctx, notPing)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(t, m); got != want {
			t.Fatalf("seq %d, want %d", got, want)
		}
	}
}
