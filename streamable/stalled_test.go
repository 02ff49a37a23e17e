package streamable_test

import (
	"bytes"
	"context"
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

const (
	floodCount = 200
	floodBytes = 64 << 10 // 200 x 64 KiB = 12.5 MiB, far past any socket buffer
)

// stallStream opens c's GET stream from a client that never reads, floods
// it, and waits until its handler is blocked in a write: the flood has been
// queued and the queue stays put.
func stallStream(t *testing.T, r *rig, c *testutil.Client) *testutil.StalledReader {
	t.Helper()
	ctx := testutil.Context(t, wait)
	sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.Close() })
	status, err := sr.Status(ctx)
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": floodCount, "bytes": floodBytes})
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), fmt.Sprintf("sent %d notifications", floodCount)) {
		t.Fatalf("flood: %s", last.Result)
	}
	prev := -1
	testutil.Eventually(t, wait, "the stream's writer to block", func() bool {
		q := r.h.Stats().QueuedMessages
		stable := q > 0 && q == prev
		prev = q
		if !stable {
			time.Sleep(20 * time.Millisecond) // spacing the samples of a bounded poll
		}
		return stable
	})
	return sr
}

func TestStalledReaderLosesStreamAfterWriteTimeoutAndNothingIsLost(t *testing.T) {
	r := newRig(t, streamable.Config{WriteTimeout: 200 * time.Millisecond})
	c := r.session()
	sr := stallStream(t, r, c)
	// The blocked write times out, the handler exits, the session lives on.
	testutil.Eventually(t, wait, "the stalled stream's handler to exit", func() bool {
		return r.h.Stats().GetStreams == 0
	})
	if r.h.Stats().Sessions != 1 {
		t.Fatal("the session was lost with its stream")
	}
	ctx := testutil.Context(t, wait)
	// What the stalled client would have read: every message written whole
	// before the write that timed out.
	body, err := sr.ReadBody(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	rd := testutil.NewSSEReader(bytes.NewReader(body))
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if m, err := ev.Message(); err == nil && notPing(m) {
			got[seqOf(t, m)]++
		}
	}
	onStalled := len(got)
	// The reconnecting reader gets the rest, starting with the message
	// whose write failed: nothing is lost across the handoff.
	s := r.stream(c)
	for len(got) < floodCount {
		m, err := s.NextMatching(ctx, notPing)
		if err != nil {
			t.Fatalf("after %d of %d messages (%d on the stalled stream): %v", len(got), floodCount, onStalled, err)
		}
		got[seqOf(t, m)]++
	}
	for seq := range floodCount {
		if got[seq] == 0 {
			t.Fatalf("message %d was lost", seq)
		}
	}
	if onStalled == 0 || onStalled == floodCount {
		t.Fatalf("%d messages reached the stalled client; the test needs some, not all", onStalled)
	}
}

// slowConfig makes a blocked write, left alone, outlast the test: only an
// interruption can free the handler in time.
func slowConfig() streamable.Config {
	return streamable.Config{WriteTimeout: time.Minute, CleanupTimeout: 30 * time.Second}
}

func TestDeleteInterruptsABlockedWriteAtOnce(t *testing.T) {
	r := newRig(t, slowConfig())
	c := r.session()
	stallStream(t, r, c)
	start := time.Now()
	resp, err := c.Delete(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	if st := r.h.Stats(); st.GetStreams != 0 || st.Sessions != 0 {
		t.Fatalf("after DELETE: %+v", st)
	}
	if took > 5*time.Second {
		t.Fatalf("DELETE took %v with a stalled reader; the blocked write was not interrupted", took)
	}
}

func TestShutdownReturnsWithStalledReaders(t *testing.T) {
	r := newRig(t, slowConfig())
	for range 3 {
		stallStream(t, r, r.session())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with stalled readers: %v", err)
	}
	if st := r.h.Stats(); st.GetStreams != 0 || st.Sessions != 0 {
		t.Fatalf("after Shutdown: %+v", st)
	}
	c := r.client()
	resp, err := c.Initialize(testutil.Context(t, wait))
	if err == nil {
		t.Fatalf("initialize after Shutdown succeeded: %+v", resp)
	}
	raw, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "after Shutdown", raw.Status, http.StatusServiceUnavailable, raw.Body, "shutting down")
	if raw.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

// floodRequestTool adds "flood_request", which queues 2000 notifications of
// 64 KiB (125 MiB, far past any socket buffer) on its own request's stream,
// retrying each one its full queue refuses, until its request is cancelled.
func floodRequestTool(s *server.MCPServer) {
	payload := strings.Repeat("x", floodBytes)
	s.AddTool(mcp.NewTool("flood_request"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		retry := time.NewTicker(time.Millisecond)
		defer retry.Stop()
		for sent := 0; sent < 2000; {
			err := s.SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "data": payload})
			if err == nil {
				sent++
				continue
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("cancelled after %d notifications: %w", sent, context.Cause(ctx))
			case <-retry.C:
			}
		}
		return mcp.NewToolResultText("flooded"), nil
	})
}

// Without an event log (with one, a request whose stream broke after an id
// went out runs on, recording for its client's resume: resume_post_test.go).
func TestStalledPostStreamIsClosedOnOverflowAndSessionLives(t *testing.T) {
	r := newRig(t, streamable.Config{QueueSize: 16, WriteTimeout: time.Minute, DisableEventLog: true}, floodRequestTool)
	c := r.session()
	ctx := testutil.Context(t, wait)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood_request"}}`
	sr, err := testutil.DialStalled(ctx, r.ts.URL, "POST", map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": c.SessionID, "MCP-Protocol-Version": testutil.ProtocolVersion,
	}, body)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled POST: %q, %v", status, err)
	}
	// The request floods its own stream faster than a stalled client reads:
	// the queue overflows while the writer is stuck, the stream is closed
	// (long before the one-minute write timeout), the request is cancelled
	// and its handler returns.
	testutil.Eventually(t, wait, "the stalled POST to end", func() bool {
		st := r.h.Stats()
		return st.PostStreams == 0 && st.Sessions == 1
	})
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "alive"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "echo after stalled POST", resp.Status, http.StatusOK, resp.Body)
}

func TestGetQueueOverflowClosesTheStalledStream(t *testing.T) {
	r := newRig(t, streamable.Config{QueueSize: 8, WriteTimeout: time.Minute})
	c := r.session()
	ctx := testutil.Context(t, wait)
	sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	// The stream cannot keep up. Once its queue is full, sends are refused
	// (the sender is told) and, its writer being stuck, the stream is closed
	// long before its one-minute write timeout.
	refused := 0
	for r.h.Stats().GetStreams > 0 {
		if ctx.Err() != nil {
			t.Fatal("the stalled stream was not closed on overflow")
		}
		resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 50, "bytes": floodBytes})
		if err != nil {
			t.Fatal(err)
		}
		if last, _ := resp.Last(); strings.Contains(string(last.Result), "refused") {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the stream closed before its queue overflowed")
	}
	if r.h.Stats().Sessions != 1 {
		t.Fatal("the session was lost with its stream")
	}
}
