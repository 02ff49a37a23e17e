package streamable_test

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// maxWriteAttempts bounds how many GET streams try to write one message,
// with replicas too: the pump forwards a carried message with its attempt
// count, so a client whose streams alternate replicas (a round-robin
// balancer) and never takes the message whole has it dropped after the
// third, not retried forever.
func TestClusterWriteAttemptsBoundedAcrossReplicas(t *testing.T) {
	c := newClusterTB(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, redisstore.Options{}, bigNoteTool)
	// Each replica also behind a listener with a small kernel send buffer.
	var urls []string
	for _, r := range c.replicas[:2] {
		ts := httptest.NewUnstartedServer(r.h)
		ts.Listener = smallSendBuffer(serverSendBuffer)(ts.Listener)
		ts.Start()
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	cl := c.session(0)
	ctx := testutil.Context(t, 60*time.Second)
	dropped := func() (n int64) {
		for _, r := range c.replicas {
			n += r.h.Stats().DroppedMessages
		}
		return n
	}
	streams := 5 // more than maxWriteAttempts (3)
	if os.Getenv("LIFELINE_ONE_REPLICA") != "" {
		streams = 3 // control: all on A, dropped after the third
	}
	for i := range streams {
		on := i % 2
		if os.Getenv("LIFELINE_ONE_REPLICA") != "" {
			on = 0
		}
		sr, err := testutil.DialStalledStream(ctx, urls[on], cl.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
			t.Fatalf("stalled GET %d on %s: %q, %v", i, c.replicas[on].name, status, err)
		}
		if i == 0 {
			sendBig(t, cl)
		}
		h := c.replicas[on].h
		testutil.Eventually(t, 15*time.Second, "the stalled stream's handler to exit", func() bool {
			return h.Stats().GetStreams == 0
		})
		sr.Close()
		t.Logf("after stream %d on %s: dropped=%d", i+1, c.replicas[on].name, dropped())
		if n := dropped(); n > 0 {
			if n != 1 || i+1 != 3 {
				t.Fatalf("dropped %d after %d streams failed, want 1 after the third (maxWriteAttempts)", n, i+1)
			}
			return
		}
	}
	t.Fatalf("%d streams failed to write the large message (maxWriteAttempts is 3), dropped %d, want 1", streams, dropped())
}
