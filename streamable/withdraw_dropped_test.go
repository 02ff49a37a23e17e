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

// A server-to-client request dropped after maxWriteAttempts fails its
// caller at once, and no notifications/cancelled is sent for a request the
// client never got whole.
func TestDroppedServerRequestFailsItsCaller(t *testing.T) {
	got := make(chan server.ClientSession, 1)
	r := newRigOn(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, smallSendBuffer(serverSendBuffer), sessionsOf(got))
	c := r.session()
	cs := <-got
	ctx := testutil.Context(t, wait)
	callDone := make(chan error, 1)
	const attempts = 3 // streamable's maxWriteAttempts
	for i := range attempts {
		sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
			t.Fatalf("stalled GET %d: %q, %v", i, status, err)
		}
		if i == 0 {
			go func() {
				cctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				defer cancel()
				callDone <- sampleWith(cctx, cs, strings.Repeat("x", bigMessage))
			}()
		}
		testutil.Eventually(t, wait, "the stalled stream's handler to exit", func() bool {
			return r.h.Stats().GetStreams == 0
		})
		sr.Close()
	}
	testutil.Eventually(t, wait, "the request to be dropped", func() bool { return r.h.Stats().DroppedMessages == 1 })
	select {
	case err := <-callDone:
		t.Logf("the caller was told: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatalf("2 s after its request was dropped (Stats %+v), RequestSampling still waits for an answer", r.h.Stats())
	}
}
