package streamable_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// lingerRig serves srv with a log that records batches and is not the
// process's memory log (as the Redis log), its responses lingering for
// linger before they open; it returns the log and an initialized
// 2025-11-25 client.
func lingerRig(t *testing.T, srv *server.MCPServer, linger time.Duration) (*batchLog, *testutil.Client) {
	t.Helper()
	log := &batchLog{MemoryEventLog: sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})}
	h := streamable.New(srv, streamable.Config{EventLog: log, HeartbeatInterval: streamable.Disabled})
	streamable.SetOpenLinger(h, linger) // before it serves
	ts := httptest.NewServer(h)
	shutDownAtCleanup(t, h, ts)
	c := testutil.NewClient(ts.URL)
	initializeAt(t, c, "2025-11-25")
	return log, c
}

// progress sends a progress notification of the request in ctx.
func progress(ctx context.Context, n int) error {
	return server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
		map[string]any{"progressToken": "tok", "progress": n})
}

// burstServer serves a tool "burst" that sends 3 progress notifications
// and answers at once.
func burstServer() *server.MCPServer {
	srv := demotools.NewServer("linger", "1")
	srv.AddTool(mcp.NewTool("burst"), burst)
	return srv
}

// burst is the tool "burst": 3 progress notifications, then the answer.
func burst(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i := 1; i <= 3; i++ {
		if err := progress(ctx, i); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText("done"), nil
}

// callWithProgress posts a tools/call of name with a progress token and
// returns its SSE response.
func callWithProgress(t *testing.T, ctx context.Context, c *testutil.Client, name string) *testutil.Stream {
	t.Helper()
	s, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": name, "_meta": map[string]any{"progressToken": "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	wantStatus(t, "tools/call", s.Status, http.StatusOK, s.Body)
	return s
}

// readAll reads s to its end: its events, comments left out.
func readAll(t *testing.T, ctx context.Context, s *testutil.Stream) []testutil.Event {
	t.Helper()
	var evs []testutil.Event
	for {
		ev, err := s.Next(ctx)
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		if !ev.IsComment() {
			evs = append(evs, ev)
		}
	}
}

// A request that sends notifications and answers within the linger, on
// a log in another process: its priming event, notifications and answer
// are recorded in one call (one round trip to Redis, not two) and
// written in order, each with its id.
func TestQuickAnswerIsRecordedWithItsNotifications(t *testing.T) {
	srv := burstServer()
	// A linger longer than the test: the answer always comes within it.
	log, c := lingerRig(t, srv, time.Hour)
	ctx := testutil.Context(t, wait)
	s := callWithProgress(t, ctx, c, "burst")
	// The response's one write is also its last: net/http sends it whole,
	// headers, events and end, with its length (not flushed, then ended in
	// a write of its own, where a client that stops reading at the answer
	// may find its connection not yet reusable).
	if s.Header.Get("Content-Length") == "" {
		t.Errorf("the response has no Content-Length (headers %v); want it written whole in one write", s.Header)
	}
	evs := readAll(t, ctx, s)
	if len(evs) != 5 || !evs[0].IsPriming() {
		t.Fatalf("events %+v; want the priming event, 3 progress notifications and the answer", evs)
	}
	for i, ev := range evs[1:4] {
		m, err := ev.Message()
		if err != nil || m.Method != "notifications/progress" || progressOf(t, m) != i+1 || ev.ID == "" {
			t.Fatalf("event %d: %+v (%v); want progress %d with an id", i+1, ev, err, i+1)
		}
	}
	if m, err := evs[4].Message(); err != nil || string(m.ID) != "7" || evs[4].ID == "" {
		t.Fatalf("last event %+v (%v); want the answer to 7 with an id", evs[4], err)
	}
	calls := log.recorded()
	if len(calls) != 1 || len(calls[0]) != 5 || calls[0][0] != 0 {
		t.Fatalf("the response's store calls, by message size: %v; want one, of the priming event (0 bytes), the 3 notifications and the answer", calls)
	}
}

// A request that sends a notification and then works on (until its
// client has the notification): the linger's end sends what it held,
// recorded first, without waiting for the answer.
func TestLingerEndsWithoutTheAnswer(t *testing.T) {
	release := make(chan struct{})
	srv := demotools.NewServer("linger", "1")
	srv.AddTool(mcp.NewTool("slow"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := progress(ctx, 1); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return mcp.NewToolResultText("done"), nil
	})
	log, c := lingerRig(t, srv, 10*time.Millisecond)
	ctx := testutil.Context(t, wait)
	s := callWithProgress(t, ctx, c, "slow")
	m, err := s.NextMessage(ctx) // the tool waits for this
	if err != nil || m.Method != "notifications/progress" {
		t.Fatalf("first message %+v (%v); want the progress notification", m, err)
	}
	close(release)
	last, err := s.NextMessage(ctx)
	if err != nil || string(last.ID) != "7" {
		t.Fatalf("next message %+v (%v); want the answer to 7", last, err)
	}
	calls := log.recorded()
	if len(calls) != 2 || len(calls[0]) != 2 || len(calls[1]) != 1 {
		t.Fatalf("the response's store calls, by message size: %v; want the priming event and the notification, then the answer", calls)
	}
}

// A request to the client is never held back, nor what came before it:
// the tool waits for the client's answer, which a held request would
// keep until the linger's end (here, past the test's). The writer takes
// notifications and requests from two queues, so either may come first.
func TestRequestToTheClientIsNotHeldBack(t *testing.T) {
	srv := server.NewMCPServer("linger", "1", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := progress(ctx, 1); err != nil {
			return nil, err
		}
		_, err := srv.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "hi"}}},
			MaxTokens: 5,
		}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("sampled"), nil
	})
	_, c := lingerRig(t, srv, time.Hour)
	ctx := testutil.Context(t, wait)
	s := callWithProgress(t, ctx, c, "ask")
	var req testutil.Message
	for got := 0; got < 2; got++ {
		m, err := s.NextMessage(ctx)
		switch {
		case err != nil:
			t.Fatalf("before the progress notification and the sampling request: %v", err)
		case m.Method == "sampling/createMessage":
			req = m
		case m.Method != "notifications/progress":
			t.Fatalf("message %+v; want the progress notification and the sampling request first", m)
		}
	}
	if req.Method == "" {
		t.Fatal("two progress notifications, no sampling request")
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(req.ID), "result": map[string]any{
		"role": "assistant", "content": map[string]any{"type": "text", "text": "ok"}, "model": "m"}}
	if resp, err := c.Post(ctx, answer); err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("the sampling answer: %+v %v", resp, err)
	}
	last, err := s.NextMessage(ctx)
	if err != nil || string(last.ID) != "7" {
		t.Fatalf("next message %+v (%v); want the answer to 7", last, err)
	}
}

// A handler that closes its response (CloseSSEStream, SSE polling) while
// its notification is held back: what is held goes out first, so the
// client has it, and its id, before the response ends; resuming from it
// gets the answer.
func TestCloseSSEStreamSendsWhatIsHeldFirst(t *testing.T) {
	closed, release := make(chan bool, 1), make(chan struct{})
	srv := demotools.NewServer("linger", "1")
	srv.AddTool(mcp.NewTool("polled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := progress(ctx, 1); err != nil {
			return nil, err
		}
		closed <- streamable.CloseSSEStream(ctx)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return mcp.NewToolResultText("done"), nil
	})
	_, c := lingerRig(t, srv, time.Hour)
	ctx := testutil.Context(t, wait)
	evs := readAll(t, ctx, callWithProgress(t, ctx, c, "polled"))
	if !bbAwait(t, closed, wait, "CloseSSEStream returned") {
		t.Fatal("CloseSSEStream reported false")
	}
	if len(evs) != 2 || !evs[0].IsPriming() || evs[1].ID == "" {
		t.Fatalf("events before the response ended: %+v; want the priming event and the progress notification, with its id", evs)
	}
	if m, err := evs[1].Message(); err != nil || m.Method != "notifications/progress" {
		t.Fatalf("second event %+v (%v); want the progress notification", evs[1], err)
	}
	close(release)
	resumed := openResume(t, c, evs[1].ID)
	wantStatus(t, "GET resuming after the progress notification", resumed.Status, http.StatusOK, resumed.Body)
	if m, err := resumed.NextMessage(ctx); err != nil || string(m.ID) != "7" {
		t.Fatalf("resumed with %+v (%v); want the answer to 7", m, err)
	}
}

// What the writer holds back is bounded: a request that sends more
// notifications than a write carries (maxBatch) before it answers has them
// go out, recorded, once the bound is reached, not held until the answer;
// every one arrives, in order, before the answer.
func TestHeldBackNotificationsAreBounded(t *testing.T) {
	const notes = 150
	srv := demotools.NewServer("linger", "1")
	srv.AddTool(mcp.NewTool("flood"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= notes; i++ {
			if err := progress(ctx, i); err != nil {
				return nil, err
			}
		}
		return mcp.NewToolResultText("done"), nil
	})
	log, c := lingerRig(t, srv, time.Hour)
	ctx := testutil.Context(t, wait)
	evs := readAll(t, ctx, callWithProgress(t, ctx, c, "flood"))
	if len(evs) != notes+2 || !evs[0].IsPriming() {
		t.Fatalf("%d events; want the priming event, %d progress notifications and the answer", len(evs), notes)
	}
	for i, ev := range evs[1 : notes+1] {
		if m, err := ev.Message(); err != nil || progressOf(t, m) != i+1 {
			t.Fatalf("event %d: %+v (%v); want progress %d", i+1, ev, err, i+1)
		}
	}
	calls := log.recorded()
	if len(calls) < 2 {
		t.Fatalf("the response's store calls, by message size: %v; want the held notifications sent at the bound, before the answer", calls)
	}
	for _, call := range calls {
		if len(call) > 2*64+1 {
			t.Fatalf("a store call of %d messages: more than the bound held back, a write's batch and the priming event", len(call))
		}
	}
}

// On the process's own log too (the default), a request that sends
// notifications and answers within the linger has its response written
// whole: the priming event, the notifications and the answer, each with
// its id, in one write with the response's end (a Content-Length), not a
// write and a flush per batch.
func TestQuickAnswerOnTheMemoryLogIsWrittenWhole(t *testing.T) {
	srv := burstServer()
	h := streamable.New(srv, streamable.Config{HeartbeatInterval: streamable.Disabled})
	streamable.SetOpenLinger(h, time.Hour) // the answer always comes within it
	ts := httptest.NewServer(h)
	shutDownAtCleanup(t, h, ts)
	c := testutil.NewClient(ts.URL)
	initializeAt(t, c, "2025-11-25")
	ctx := testutil.Context(t, wait)
	s := callWithProgress(t, ctx, c, "burst")
	if s.Header.Get("Content-Length") == "" {
		t.Errorf("the response has no Content-Length (headers %v); want it written whole in one write", s.Header)
	}
	evs := readAll(t, ctx, s)
	if len(evs) != 5 || !evs[0].IsPriming() {
		t.Fatalf("events %+v; want the priming event, 3 progress notifications and the answer", evs)
	}
	for i, ev := range evs[1:] {
		if ev.ID == "" {
			t.Fatalf("event %d %+v has no id; want every event recorded", i+1, ev)
		}
	}
}
