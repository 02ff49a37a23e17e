package streamable_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// slowSendCluster is a cluster whose replicas A and B are also served behind
// listeners with a small kernel send buffer, and whose registered
// ClientSessions the test can take, per replica (0 = A).
func slowSendCluster(t *testing.T) (*cluster, []string, []chan server.ClientSession) {
	t.Helper()
	var mu sync.Mutex
	var regs []chan server.ClientSession
	c := newClusterTB(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, redisstore.Options{}, func(s *server.MCPServer) {
		ch := make(chan server.ClientSession, 4)
		mu.Lock()
		regs = append(regs, ch)
		mu.Unlock()
		hooks := &server.Hooks{}
		hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
			if streamable.IsBroadcastTap(cs) {
				return
			}
			select {
			case ch <- cs:
			default:
			}
		})
		server.WithHooks(hooks)(s)
		s.EnableSampling()
	})
	var urls []string
	for _, r := range c.replicas[:2] {
		ts := httptest.NewUnstartedServer(r.h)
		ts.Listener = smallSendBuffer(serverSendBuffer)(ts.Listener)
		ts.Start()
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	return c, urls, regs
}

// stallOnce opens a stalled GET on url and waits until that replica's
// stream handler has exited (its write of a large message failed).
func stallOnce(t *testing.T, ctx context.Context, url, sid string, h *streamable.Handler, what string) {
	t.Helper()
	sr, err := testutil.DialStalledStream(ctx, url, sid)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET %s: %q, %v", what, status, err)
	}
	testutil.Eventually(t, 20*time.Second, "the stalled stream's handler to exit ("+what+")", func() bool {
		return h.Stats().GetStreams == 0
	})
}

// With replicas, a server-to-client request dropped after maxWriteAttempts
// on a replica that did not issue it fails its caller at once: the holder
// answers it with an error on the session's bus.
func TestClusterDroppedRequestFailsItsCaller(t *testing.T) {
	c, urls, regs := slowSendCluster(t)
	cl := c.session(0)
	csA := <-regs[0]
	ctx := testutil.Context(t, 60*time.Second)

	callDone := make(chan error, 1)
	sr, err := testutil.DialStalledStream(ctx, urls[0], cl.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET on A: %q, %v", status, err)
	}
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		callDone <- sampleWith(cctx, csA, strings.Repeat("x", bigMessage))
	}()
	testutil.Eventually(t, 20*time.Second, "A's stalled stream to exit", func() bool {
		return c.replicas[0].h.Stats().GetStreams == 0
	})
	sr.Close()
	stallOnce(t, ctx, urls[1], cl.SessionID, c.replicas[1].h, "on B")
	stallOnce(t, ctx, urls[0], cl.SessionID, c.replicas[0].h, "on A again")
	dropped := func() (n int64) {
		for _, r := range c.replicas {
			n += r.h.Stats().DroppedMessages
		}
		return n
	}
	testutil.Eventually(t, 10*time.Second, "the request to be dropped", func() bool { return dropped() == 1 })
	select {
	case err := <-callDone:
		t.Logf("the caller was told: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatalf("2 s after its request was dropped (dropped=%d), RequestSampling still waits for an answer", dropped())
	}
}
