package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// sessionSteppedTool adds "session_stepped": once per value on step it
// sends a notifications/message with data {"seq": i} (i from 1) to the
// caller's session (for its GET stream, not the call's response), steps
// times, then returns "done" on one more step.
func sessionSteppedTool(steps int, step <-chan struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("session_stepped"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := server.ClientSessionFromContext(ctx).SessionID()
			for i := 1; i <= steps+1; i++ {
				select {
				case <-step:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				if i > steps {
					break
				}
				if err := s.SendNotificationToSpecificClient(id, "notifications/message",
					map[string]any{"level": "info", "logger": "session_stepped", "data": map[string]any{"seq": i}}); err != nil {
					return nil, fmt.Errorf("step %d: %w", i, err)
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	}
}

// steppedSeq returns the seq of a session_stepped notification, or 0.
func steppedSeq(m testutil.Message) int {
	if m.Method != "notifications/message" {
		return 0
	}
	var p struct {
		Logger string `json:"logger"`
		Data   struct {
			Seq int `json:"seq"`
		} `json:"data"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.Logger != "session_stepped" {
		return 0
	}
	return p.Data.Seq
}

// seqReader reads session_stepped notifications off GET streams, keeping
// the last event id, and fails on one seen twice or out of order.
type seqReader struct {
	t      *testing.T
	next   int // the seq expected next
	lastID string
}

// until reads s until seq n arrived.
func (r *seqReader) until(ctx context.Context, s *testutil.Stream, n int, what string) {
	r.t.Helper()
	for r.next <= n {
		ev, err := s.NextMessageEvent(ctx)
		if err != nil {
			r.t.Fatalf("%s: seq %d never arrived (want up to %d): %v", what, r.next, n, err)
		}
		m, err := ev.Message()
		if err != nil {
			r.t.Fatal(err)
		}
		if ev.ID != "" {
			r.lastID = ev.ID
		}
		seq := steppedSeq(m)
		if seq == 0 {
			continue
		}
		if seq != r.next {
			r.t.Fatalf("%s: seq %d arrived, want %d (lost, doubled or out of order)", what, seq, r.next)
		}
		r.next++
	}
}

func drainCluster(t *testing.T, steps int, step chan struct{}) *cluster {
	return newConfiguredCluster(t, streamable.Config{}, redisstore.Options{},
		func(store *redisstore.Store, cfg *streamable.Config) {
			cfg.EventLog = store.EventLog(sessionstore.EventLogOptions{})
		}, sessionSteppedTool(steps, step))
}

func callSessionStepped(t *testing.T, ctx context.Context, c *testutil.Client) *testutil.Stream {
	t.Helper()
	s, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 21, "method": "tools/call",
		"params": map[string]any{"name": "session_stepped"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func stepOnce(t *testing.T, ctx context.Context, step chan<- struct{}) {
	t.Helper()
	select {
	case step <- struct{}{}:
	case <-ctx.Done():
		t.Fatal("the call stopped taking steps")
	}
}

// What a call still running on a draining replica sends to its session's
// GET stream, held on another replica, reaches that stream: the draining
// replica goes on forwarding until its requests are done, then hands on
// what it still holds. Each arrives once, in order.
func TestDrainingReplicaForwardsWhatItsRunningCallsSendToTheSessionsStream(t *testing.T) {
	const steps = 6
	step := make(chan struct{})
	cl := drainCluster(t, steps, step)
	a := cl.replicas[0]
	c := cl.session(0)
	ctx := testutil.Context(t, 2*wait)
	get := cl.stream(cl.client(1, c)) // the session's stream, on B
	callSessionStepped(t, ctx, c)     // the call, on A
	r := &seqReader{t: t, next: 1}
	stepOnce(t, ctx, step)
	r.until(ctx, get, 1, "before the drain")

	shut := make(chan error, 1)
	go func() { shut <- a.h.Shutdown(ctx) }()
	for range steps { // the rest of the notifications, and the answer
		stepOnce(t, ctx, step)
	}
	r.until(ctx, get, steps, "B's stream, through A's drain")
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// What a call still running on a draining replica sends to its session's
// GET stream while no replica holds that stream is recorded in the shared
// event log as the stream's next events: the client's next resume, on
// another replica, replays each once, in order.
func TestDrainingReplicaRecordsWhatNoStreamTakesForTheNextResume(t *testing.T) {
	const steps = 6
	step := make(chan struct{})
	cl := drainCluster(t, steps, step)
	a := cl.replicas[0]
	c := cl.session(0)
	ctx := testutil.Context(t, 2*wait)
	get := cl.stream(cl.client(1, c))
	callSessionStepped(t, ctx, c)
	r := &seqReader{t: t, next: 1}
	stepOnce(t, ctx, step)
	r.until(ctx, get, 1, "before the drain")
	if r.lastID == "" {
		t.Fatal("the GET stream's events carry no ids")
	}
	get.Close() // no stream anywhere while A drains
	testutil.Eventually(t, wait, "B's stream has ended", func() bool {
		return cl.replicas[1].h.Stats().GetStreams == 0
	})

	shut := make(chan error, 1)
	go func() { shut <- a.h.Shutdown(ctx) }()
	for range steps {
		stepOnce(t, ctx, step)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	resumed := openResume(t, cl.client(2, c), r.lastID)
	wantStatus(t, "GET on C resuming the session's stream", resumed.Status, 200, resumed.Body)
	r.until(ctx, resumed, steps, "C's resumed stream, after A's drain")
}
