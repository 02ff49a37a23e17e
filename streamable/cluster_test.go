package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A session initialized on A serves requests on B and C, which rebuild it
// from the record with the client's info, capabilities and version.
func TestClusterSessionServesOnEveryReplica(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	want := "lifeline-testutil/1 " + testutil.ProtocolVersion + " sampling=true"
	for i := range 3 {
		cl := c.client(i, a)
		if got := toolText(t, cl, toolWhoAmI, nil); got != want {
			t.Errorf("replica %d: whoami = %q, want %q", i, got, want)
		}
		if got := toolText(t, cl, "echo", map[string]any{"text": "hi"}); got != "hi" {
			t.Errorf("replica %d: echo = %q", i, got)
		}
	}
	// And through the round-robin proxy, every request on a different replica.
	p := testutil.NewClient(c.proxy + "/")
	if _, err := p.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if got := toolText(t, p, toolWhoAmI, nil); got != want {
			t.Fatalf("proxied call %d: whoami = %q, want %q", i, got, want)
		}
	}
}

// With the GET stream on A, a tool on B that notifies the session delivers
// each notification on A's stream exactly once, in order.
func TestClusterNotificationReachesTheStreamOnAnotherReplica(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(a)
	const n = 20
	if got := toolText(t, c.client(1, a), "lifeline_notify_session", map[string]any{"count": n}); got == "" {
		t.Fatal("empty result")
	}
	ctx := testutil.Context(t, wait)
	isLog := func(m testutil.Message) bool { return m.Method == "notifications/message" }
	for i := range n {
		m, err := st.NextMatching(ctx, isLog)
		if err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
		if want := fmt.Sprintf(`"seq":%d`, i); !strings.Contains(string(m.Params), want) {
			t.Fatalf("notification %d: params %s, want %s", i, m.Params, want)
		}
	}
	// A marker sent from C comes next: nothing was written twice.
	toolText(t, c.client(2, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 6})
	m, err := st.NextMatching(ctx, isLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Params), `"xxxxxx"`) {
		t.Fatalf("after %d notifications got %s, want the marker (a duplicate?)", n, m.Params)
	}
}

// A tool on B asks for sampling on the session's stream, held by A; the
// client's answer POSTed to C reaches the tool on B.
func TestClusterSamplingOnTheStreamRoundTrip(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(a)
	result := make(chan string, 1)
	go func() {
		resp, err := c.client(1, a).CallTool(testutil.Context(t, wait), toolSampleOnStream, map[string]any{"prompt": "q"})
		if err != nil {
			result <- err.Error()
			return
		}
		m, _ := resp.Last()
		result <- string(m.Result)
	}()
	ctx := testutil.Context(t, wait)
	req, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "sampling/createMessage" })
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.client(2, a).Reply(ctx, req.ID, samplingResult("from C"))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "reply on C", resp.Status, http.StatusAccepted, resp.Body)
	select {
	case got := <-result:
		if !strings.Contains(got, "sampled: from C") {
			t.Fatalf("tool result %s", got)
		}
	case <-ctx.Done():
		t.Fatal("the tool on B never got the answer POSTed to C")
	}
}

// A tool on B asks for sampling during its call: the request travels on the
// call's own response, and the answer POSTed to C reaches it.
func TestClusterSamplingInACallAnsweredOnAnotherReplica(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	b := c.client(1, a)
	ctx := testutil.Context(t, wait)
	call, err := b.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": toolSampleInCall, "arguments": map[string]any{"prompt": "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	wantStatus(t, "tools/call on B", call.Status, http.StatusOK, call.Body)
	req, err := call.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "sampling/createMessage" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client(2, a).Reply(ctx, req.ID, samplingResult("via C")); err != nil {
		t.Fatal(err)
	}
	m, err := call.NextMatching(ctx, func(m testutil.Message) bool { return string(m.ID) == "7" })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Result), "sampled: via C") {
		t.Fatalf("tool result %s", m.Result)
	}
}

// A second GET on any replica while A's stream is live gets 409.
func TestClusterSecondStreamConflicts(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(a)
	st.AnswerPings(true)
	testutil.Eventually(t, wait, "a ping answered", func() bool { return st.Pongs() > 0 })
	for i := range 3 {
		s2, err := c.client(i, a).OpenStream(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("second GET on replica %d", i), s2.Status, http.StatusConflict, s2.Body)
		s2.Close()
	}
	select {
	case <-st.Ended():
		t.Fatal("the live stream ended")
	default:
	}
}

// A stream whose client stopped answering pings (the connection still open)
// is taken over by a GET on another replica.
func TestClusterDeadStreamIsTakenOverAcrossReplicas(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(a)
	st.AnswerPings(true)
	testutil.Eventually(t, wait, "a ping answered", func() bool { return st.Pongs() > 0 })
	st.AnswerPings(false)
	s2, err := c.client(1, a).OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	wantStatus(t, "GET on B", s2.Status, http.StatusOK, s2.Body)
	select {
	case <-st.Ended():
	case <-time.After(wait):
		t.Fatal("A's dead stream was not closed")
	}
	// The new stream gets the session's messages.
	toolText(t, c.client(2, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 5})
	m, err := s2.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.Method == "notifications/message" })
	if err != nil || !strings.Contains(string(m.Params), `"xxxxx"`) {
		t.Fatalf("new stream: %s, %v", m.Params, err)
	}
}

// DELETE on C ends A's stream within 200 ms, and every replica answers 404
// for the session afterwards.
func TestClusterDeleteEndsTheStreamEverywhere(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	toolText(t, c.client(1, a), "echo", map[string]any{"text": "B adopts it"})
	st := c.stream(a)
	resp, err := c.client(2, a).Delete(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE on C", resp.Status, http.StatusOK, resp.Body)
	deleted := time.Now()
	select {
	case <-st.Ended():
		if d := time.Since(deleted); d > 200*time.Millisecond {
			t.Errorf("A's stream ended %v after DELETE on C, want under 200 ms", d)
		}
	case <-time.After(wait):
		t.Fatal("A's stream is still open after DELETE on C")
	}
	ctx := testutil.Context(t, wait)
	for i := range 3 {
		cl := c.client(i, a)
		r, err := cl.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("POST on replica %d", i), r.Status, http.StatusNotFound, r.Body)
		s, err := cl.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("GET on replica %d", i), s.Status, http.StatusNotFound, s.Body)
		d, err := cl.Delete(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("DELETE on replica %d", i), d.Status, http.StatusNotFound, d.Body)
	}
	// Every replica drops its copy.
	testutil.Eventually(t, wait, "no replica holds the session", func() bool {
		for _, r := range c.replicas {
			if r.h.Stats().Sessions != 0 {
				return false
			}
		}
		return true
	})
}

// Idle expiry holds cluster-wide: use on any replica keeps a session alive;
// once nobody uses it, it is gone on every replica.
func TestClusterIdleExpiry(t *testing.T) {
	const ttl = 400 * time.Millisecond
	c := newCluster(t, streamable.Config{IdleTTL: ttl}, redisstore.Options{})
	a := c.session(0)
	// Used on B and C only, for twice the TTL: A never sees it again, yet
	// it lives.
	pace := time.NewTicker(ttl / 4)
	defer pace.Stop()
	for i := range 8 {
		<-pace.C
		toolText(t, c.client(1+i%2, a), "echo", map[string]any{"text": "keepalive"})
	}
	toolText(t, c.client(0, a), "echo", map[string]any{"text": "still here"})
	// Idle now: it expires in the store (asked directly: a request would
	// be a use), and then every replica answers 404.
	testutil.Eventually(t, wait, "the session expired in Redis", func() bool {
		_, err := c.replicas[0].store.Get(context.Background(), a.SessionID)
		return err != nil
	})
	for i := range 3 {
		r, err := c.client(i, a).CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, fmt.Sprintf("POST on replica %d after expiry", i), r.Status, http.StatusNotFound, r.Body)
	}
	var body struct {
		Error struct{ Message string } `json:"error"`
	}
	r, _ := c.client(1, a).CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if json.Unmarshal(r.Body, &body) != nil || body.Error.Message == "" {
		t.Errorf("404 without a JSON-RPC error: %s", r.Body)
	}
}

// Notifications sent on B while no replica holds the session's stream wait
// there, and reach the client's next GET wherever it lands.
func TestClusterNotificationsWaitForTheNextStream(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	toolText(t, c.client(1, a), "lifeline_notify_session", map[string]any{"count": 3})
	st := c.stream(c.client(2, a))
	ctx := testutil.Context(t, wait)
	for i := range 3 {
		m, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
		if want := fmt.Sprintf(`"seq":%d`, i); !strings.Contains(string(m.Params), want) {
			t.Fatalf("notification %d: params %s, want %s", i, m.Params, want)
		}
	}
}
