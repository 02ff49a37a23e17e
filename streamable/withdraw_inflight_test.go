package streamable_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A server-to-client request whose caller gives up while a stream is
// writing it, a write that then fails, is not written again on the next
// stream: only its cancellation is.
func TestRequestAbandonedMidWriteIsNotDeliveredLater(t *testing.T) {
	got := make(chan server.ClientSession, 1)
	r := newRigOn(t, streamable.Config{WriteTimeout: 2 * time.Second}, smallSendBuffer(serverSendBuffer), sessionsOf(got))
	c := r.session()
	cs := <-got
	ctx := testutil.Context(t, 30*time.Second)

	callCtx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	callDone := make(chan error, 1)
	go func() { callDone <- sampleWith(callCtx, cs, strings.Repeat("x", bigMessage)) }()
	testutil.Eventually(t, wait, "the request to be queued", func() bool { return r.h.Stats().QueuedMessages == 1 })
	sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	// The stream took the request and is blocked writing it.
	testutil.Eventually(t, wait, "the stalled stream to take the request", func() bool {
		st := r.h.Stats()
		return st.QueuedMessages == 0 && st.GetStreams == 1
	})
	giveUp()
	if err := <-callDone; err == nil {
		t.Fatal("RequestSampling succeeded")
	}
	if r.h.Stats().GetStreams != 1 {
		t.Fatal("the stalled write ended before the caller gave up; the test proves nothing")
	}
	testutil.Eventually(t, wait, "the stalled write to fail", func() bool { return r.h.Stats().GetStreams == 0 })
	sr.Close()

	st := r.stream(c)
	st.AnswerPings(true)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if m, err := st.NextMatching(rctx, isSampling); err == nil {
		next, nerr := st.NextMatching(rctx, func(m testutil.Message) bool { return m.Method != "ping" })
		t.Logf("followed by: %s %s (%v)", next.Method, next.Params, nerr)
		t.Fatalf("the next stream delivered sampling request %s (%d bytes) after its caller gave up", m.ID, len(m.Params))
	}
}
