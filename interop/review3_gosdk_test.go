package interop

import (
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Review 3: the Go SDK v1.8.0 client, at 2025-11-25, with lifeline's
// defaults (the memory event log on). Its standalone stream stays open and
// quiet for an hour while the client makes a call every ten minutes (the
// session is busy, never idle); the event log's default 30-minute TTL
// lapses. A proxy then cuts the stream. The SDK resumes with the last id
// it got; lifeline answers 400 (the log forgot the id), and the SDK fails
// the whole client connection (handleSSE -> checkResponse -> c.fail):
// later notifications never arrive and calls fail. Before the event log
// the SDK reconnected without Last-Event-ID and carried on.
func TestReview3_GoSDKSessionSurvivesAStreamCutAfterAQuietHour(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	h := start(t, streamable.Config{Clock: clock, HeartbeatInterval: streamable.Disabled})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire:\n%s", h.Wire.dump(""))
		}
	})
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{h.URL}})
	u, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, 4*wait)
	g := newGoSDK(h)
	cs := g.mustConnect(t, ctx, func(tr *mcp.StreamableClientTransport) { tr.Endpoint = proxy.URL() + u.Path })
	defer cs.Close()
	send := func(text string) {
		t.Helper()
		if err := h.S.SendNotificationToSpecificClient(cs.ID(), "notifications/message",
			map[string]any{"level": "info", "data": map[string]any{"text": text}}); err != nil {
			t.Fatalf("send %s: %v", text, err)
		}
	}
	// The standalone stream is up (the notification came on it, with an id).
	testutil.Eventually(t, wait, "the standalone stream", func() bool { return h.H.Stats().GetStreams == 1 })
	send("one")
	g.waitLog(t, "one")
	for range 6 {
		clock.Advance(10 * time.Minute)
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
	before := proxy.Stats().Requests
	if n := proxy.Cut(func(ci testutil.ConnInfo) bool { return ci.Method == "GET" }); n != 1 {
		t.Fatalf("cut %d GET connections, want 1", n)
	}
	// The SDK reconnects (after the server's retry, 1 s); the old stream's
	// handler has long exited by then (net/http saw the FIN).
	testutil.Eventually(t, wait, "the SDK's reconnecting GET", func() bool { return proxy.Stats().Requests > before })
	testutil.Eventually(t, wait, "the SDK's standalone stream back (it got 400 and closed the session: see the wire)", func() bool {
		return h.H.Stats().GetStreams == 1
	})
	send("two")
	g.waitLog(t, "two")
	mustEcho(t, ctx, cs, "still here")
}
