package streamable_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A 2025-11-25 response opened by the request's first message carries the
// priming event, then that message. A client whose connection dropped
// after the priming event resumes from its id: the first message, which
// it never got, is replayed with the rest.
func TestResumeFromThePrimingEventReplaysTheFirstMessage(t *testing.T) {
	const steps = 3
	step := make(chan struct{}, 1)
	// No heartbeat: nothing opens the response before the first message.
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, steppedTool(steps, step))
	c := r.client()
	initializeAt(t, c, "2025-11-25")
	ctx := testutil.Context(t, wait)
	step <- struct{}{} // progress 1 opens the response
	call := callStepped(t, ctx, c, 5)
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", first, err)
	}
	pr := &postReader{t: t, ids: map[string]bool{}}
	pr.take(first)
	call.Close() // the connection drops after the priming event
	for range steps {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the tool stopped taking steps once its stream was cut: the request was cancelled")
		}
	}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET resuming from the priming event", resumed.Status, http.StatusOK, resumed.Body)
	pr.until(ctx, resumed, -1)
	pr.check(steps, "5")
}
