package streamable_test

import (
	"context"
	"strings"
	"testing"

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
