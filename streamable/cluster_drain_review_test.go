package streamable_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A GET stream that a draining replica closes still has its topic read
// while the drain goes on (cluster_linger.go): what a pump on another
// replica sends it, having read the lease before its release, is kept and
// handed on to the session's next stream, not published to a topic
// nobody reads any more.
func TestDrainingReplicasEndedStreamTopicLingersForWhatPumpsSentIt(t *testing.T) {
	const steps = 2
	step := make(chan struct{})
	cl := drainCluster(t, steps, step)
	a, b := cl.replicas[0], cl.replicas[1]
	c := cl.session(0)
	ctx := testutil.Context(t, 2*wait)
	get := cl.stream(c) // the session's stream, on A
	old, ok, err := a.store.StreamHolder(ctx, c.SessionID)
	if err != nil || !ok {
		t.Fatalf("StreamHolder: %v %v", ok, err)
	}
	callSessionStepped(t, ctx, c) // the call, on A: it keeps A draining
	r := &seqReader{t: t, next: 1}
	stepOnce(t, ctx, step)
	r.until(ctx, get, 1, "A's stream, before the drain")

	shut := make(chan error, 1)
	go func() { shut <- a.h.Shutdown(ctx) }()
	select {
	case <-get.Ended(): // A closed the session's stream as its drain began
	case <-ctx.Done():
		t.Fatal("A's stream did not end at Shutdown")
	}
	testutil.Eventually(t, wait, "A's stream has gone", func() bool { return a.h.Stats().GetStreams == 0 })
	// A pump (on B, say) that read the lease before A released it sends
	// to A's ended stream's topic.
	const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sent-to-the-drained-stream"}}`
	if err := b.store.PublishTopic(ctx, c.SessionID, old.Holder, []byte(note)); err != nil {
		t.Fatalf("PublishTopic to A's ended stream: %v", err)
	}
	resumed := openResume(t, cl.client(1, c), r.lastID)
	wantStatus(t, "GET on B resuming the session's stream", resumed.Status, 200, resumed.Body)
	for range steps { // the rest of the notifications, and the answer
		stepOnce(t, ctx, step)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	mctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := resumed.NextMatching(mctx, func(m testutil.Message) bool {
		return strings.Contains(string(m.Params), "sent-to-the-drained-stream")
	}); err != nil {
		t.Fatalf("what a pump sent to the drained replica's ended stream never reached the session's next stream: %v", err)
	}
}

// stuckTool adds "stuck": it ignores its cancellation and returns only
// once release is closed.
func stuckTool(entered chan<- struct{}, release <-chan struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("stuck"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			<-release
			return mcp.NewToolResultText("unstuck"), nil
		})
	}
}

// A Shutdown whose ctx ends while one session's request still runs (it
// ignores its cancellation) still hands on what another session, whose
// request finished within the drain, holds for its stream: that
// session's client resumes on another replica and gets each message.
func TestDrainThatOutlivesItsContextStillHandsOnOtherSessionsMessages(t *testing.T) {
	const steps = 4
	step := make(chan struct{})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	cl := newConfiguredCluster(t, streamable.Config{}, redisstore.Options{},
		func(store *redisstore.Store, cfg *streamable.Config) {
			cfg.EventLog = store.EventLog(sessionstore.EventLogOptions{})
		}, sessionSteppedTool(steps, step), stuckTool(entered, release))
	var once sync.Once
	unstick := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unstick) // before the replicas' Shutdown
	a := cl.replicas[0]
	cl.shutdownMayFail = map[string]bool{a.name: true}
	ctx := testutil.Context(t, 3*wait)

	// Session 1: its call on A sends to its stream while none is open:
	// A's pump holds the messages, then the call returns.
	c1 := cl.session(0)
	get := cl.stream(cl.client(1, c1))
	call := callSessionStepped(t, ctx, c1)
	r := &seqReader{t: t, next: 1}
	stepOnce(t, ctx, step)
	r.until(ctx, get, 1, "B's stream")
	get.Close()
	testutil.Eventually(t, wait, "B's stream has ended", func() bool { return cl.replicas[1].h.Stats().GetStreams == 0 })
	for range steps {
		stepOnce(t, ctx, step)
	}
	if _, err := call.NextMatching(ctx, func(m testutil.Message) bool { return m.ID != nil }); err != nil {
		t.Fatalf("session 1's call did not answer: %v", err)
	}

	// Session 2: its call on A never ends in time.
	c2 := cl.session(0)
	go func() {
		_, _ = c2.CallTool(context.WithoutCancel(ctx), "stuck", nil)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the stuck call never started")
	}

	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := a.h.Shutdown(sctx); err == nil {
		t.Fatal("Shutdown returned nil while a request was still running")
	}
	unstick()
	resumed := openResume(t, cl.client(2, c1), r.lastID)
	wantStatus(t, "GET on C resuming session 1's stream", resumed.Status, 200, resumed.Body)
	rctx, rcancel := context.WithTimeout(ctx, wait)
	defer rcancel()
	r.until(rctx, resumed, steps, "C's resumed stream, after A's drain outlived its ctx")
}
