package interop

import (
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The Go SDK v1.8.0 client, at 2025-11-25, with lifeline's defaults (the
// memory event log on): its standalone stream stays open and quiet for an
// hour while it makes a call every ten minutes, then a proxy cuts it. It
// resumes with the last id it got, and its session carries on (a 400 would
// make it fail its whole connection).
func TestGoSDKSessionSurvivesAStreamCutAfterAQuietHour(t *testing.T) {
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
