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

// review3Cluster is a cluster whose replicas A and B are also served behind
// listeners with a small kernel send buffer, and whose registered
// ClientSessions the test can take, per replica (0 = A).
func review3Cluster(t *testing.T) (*cluster, []string, []chan server.ClientSession) {
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

// review-3: with replicas, a server-to-client request whose caller gave up
// is delivered later. The pump forwards the request to the replica holding
// the stream (on the issuing replica it is then "taken"); if the holder's
// write fails, the holder keeps it in its own carry-over, where the
// issuing replica's withdrawal cannot reach it, and writes it to the
// client's next stream, after the caller gave up. ARCHITECTURE section 10
// says such a request "is never delivered later".
func TestReview3ClusterAbandonedRequestIsDeliveredLater(t *testing.T) {
	c, urls, regs := review3Cluster(t)
	cl := c.session(0)
	csA := <-regs[0]
	ctx := testutil.Context(t, 60*time.Second)

	// Stream 1 on A takes the (large) sampling request and fails to write
	// it: kept in A's carry-over, then handed to A's pump.
	callCtx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	callDone := make(chan error, 1)
	sr, err := testutil.DialStalledStream(ctx, urls[0], cl.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET on A: %q, %v", status, err)
	}
	go func() { callDone <- sampleWith(callCtx, csA, strings.Repeat("x", bigMessage)) }()
	testutil.Eventually(t, 20*time.Second, "A's stalled stream to exit", func() bool {
		return c.replicas[0].h.Stats().GetStreams == 0
	})
	sr.Close()

	// Stream 2 on B: A's pump forwards the request there; B fails to
	// write it too and keeps it in B's carry-over.
	stallOnce(t, ctx, urls[1], cl.SessionID, c.replicas[1].h, "on B")

	// The caller gives up.
	giveUp()
	select {
	case err := <-callDone:
		t.Logf("the caller gave up: %v", err)
	case <-ctx.Done():
		t.Fatal("RequestSampling did not return after its context ended")
	}

	// The client's next stream, on B, must never see that request.
	st := c.stream(c.client(1, cl))
	st.AnswerPings(true)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var seen []string
	for {
		m, err := st.NextMatching(rctx, func(m testutil.Message) bool { return m.Method != "ping" })
		if err != nil {
			break
		}
		seen = append(seen, m.Method)
		if isSampling(m) {
			t.Fatalf("the client's next stream delivered sampling request id %s (%d bytes of params) after its caller gave up; messages in order: %v", m.ID, len(m.Params), seen)
		}
	}
	t.Logf("not delivered within 3 s; saw %v", seen)
}

// review-3: with replicas, a server-to-client request dropped after
// maxWriteAttempts does not fail its caller: the drop happens on a
// replica (or on a copy of the message that came back over the bus) that
// does not know the call, so undeliverable finds no entry. ARCHITECTURE
// section 10: "one dropped after its write attempts fails its caller at
// once".
func TestReview3ClusterDroppedRequestDoesNotFailItsCaller(t *testing.T) {
	c, urls, regs := review3Cluster(t)
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
