package streamable_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Review of issue 11 (2026-07-28 transport, listen streams, broadcasts):
// tests named TestReview11_* fail on the code under review and show a bug;
// TestAccept11_* test a claim from the outside and pass.

// markerFilterSetup gives a server the capabilities the broadcast tests use.
func markerFilterSetup(s *server.MCPServer) {
	server.WithPromptCapabilities(true)(s)
	server.WithResourceCapabilities(true, true)(s)
}

// One replica: a broadcast raised while a session has no GET stream is
// held in the session's queue and arrives when the stream opens.
func TestAccept11_SingleReplicaBroadcastWithoutGetStreamIsHeld(t *testing.T) {
	r := newRig(t, streamable.Config{}, markerFilterSetup)
	cl := r.session()
	r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"gap": 1})
	s := r.stream(cl)
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 1)
	if got[`notifications/tools/list_changed {"gap":1}`] != 1 {
		t.Fatalf("GET stream got %v before the marker; want the broadcast raised before it opened", got)
	}
}

// With replicas sharing a store, a broadcast raised while a session has no
// GET stream open (between two GETs, or before its first) is lost: the
// session reports an active empty subscription filter, so mcp-go skips it,
// and deliverBroadcast hands the broadcast only to sessions whose GET
// stream is live at that instant (broadcast_cluster.go). Alone, the same
// session would hold it in its queue (TestAccept11_Single...).
func TestReview11_ClusterBroadcastWithoutGetStreamIsLost(t *testing.T) {
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, markerFilterSetup)
	cl := c.session(0)
	c.replicas[0].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"gap": 1})
	s := c.stream(c.client(0, cl))
	c.replicas[0].mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 1)
	if got[`notifications/tools/list_changed {"gap":1}`] != 1 {
		t.Fatalf("GET stream got %v before the marker; the broadcast raised while the session had no GET stream was lost", got)
	}
}

// Listen streams hold their places in MaxSessions: with MaxSessions 2
// (MaxListenStreams at its default, 10,000), two open subscriptions/listen
// streams lock every session-era client out (initialize gets 503 "the
// server holds its maximum of 2 sessions") while Stats reports no
// session at all. Long-lived sessionless streams consume the session
// era's capacity, and the defaults (10,000 each) let listen streams alone
// exhaust it, so MaxListenStreams does not protect the session era.
func TestReview11_ListenStreamsExhaustMaxSessions(t *testing.T) {
	r := newRig(t, streamable.Config{MaxSessions: 2}, markerFilterSetup)
	ctx := testutil.Context(t, wait)
	for i := range 2 {
		l := r.openListen(ctx, t, i, map[string]any{"toolsListChanged": true})
		l.next(t) // acknowledged
	}
	st := r.h.Stats()
	resp, err := r.client().Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "t", "version": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("with Stats %+v (MaxSessions 2), initialize answered %d: %s", st, resp.Status, resp.Body)
	}
}

// A listen filter naming one resource many times is recorded whole: the
// duplicates pass MaxSubscriptionsPerSession (addSubscription counts
// distinct URIs), so the stream's filter (and its acknowledgement) holds
// as many entries as the body can carry (~1M in 4 MB), each resource
// check (resourceExists, which may list every template page) runs once
// per entry, and every notifications/resources/updated broadcast scans
// the whole list under the feed's lock on the tap's goroutine (listen.go
// wants), delaying every other stream's broadcasts.
func TestReview11_ListenFilterDuplicatesUnbounded(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		markerFilterSetup(s)
		s.AddResource(mcp.NewResource("test://one", "one"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	ctx := testutil.Context(t, wait)
	const n = streamable.MaxSubscriptionsPerSession + 1000
	uris := make([]string, n)
	for i := range uris {
		uris[i] = "test://one"
	}
	l := r.openListen(ctx, t, "D", map[string]any{"resourceSubscriptions": uris})
	ack := l.next(t)
	var p struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if err := json.Unmarshal(ack.Params, &p); err != nil {
		t.Fatal(err)
	}
	if got := len(p.Notifications.ResourceSubscriptions); got > streamable.MaxSubscriptionsPerSession {
		t.Fatalf("the listen stream holds a filter of %d resource subscriptions (one distinct URI); at most %d are allowed per session",
			got, streamable.MaxSubscriptionsPerSession)
	}
}

// A 2026-07-28 request refused because the server is shutting down gets
// its 503 with a null id, although its body (and id) arrive at once: the
// refusal happens in ServeHTTP before the body is read, unlike the 406 and
// 415 refusals, which peek at the body for the id (refuseWithID).
func TestReview11_ShuttingDownRefusalEchoesID(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("done"), nil
		})
	})
	ctx := testutil.Context(t, wait)
	held := make(chan *testutil.Response, 1)
	go func() {
		resp, err := r.client().Do(r.modernRequest(ctx, t, modernMsg(1, "tools/call", map[string]any{"name": "hold"}, nil), nil))
		if err != nil {
			t.Error(err)
		}
		held <- resp
	}()
	<-started
	down := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		down <- r.h.Shutdown(sctx)
	}()
	var resp *testutil.Response
	testutil.Eventually(t, wait, "a refusal while shutting down", func() bool {
		resp = r.modernPost(ctx, t, modernMsg(77, "tools/list", nil, nil), nil)
		return resp.Status == http.StatusServiceUnavailable
	})
	close(release)
	<-held
	if err := <-down; err != nil {
		t.Fatal(err)
	}
	if id, _, msg, _ := rpcErrorOf(t, resp); id != "77" {
		t.Fatalf("503 while shutting down (%s) echoes id %s, want 77", msg, id)
	}
}

// blockedPublishStore is a redisstore.Store whose PublishBroadcast blocks
// until release is closed or its context ends (a store that hangs, as
// Redis does when it is unreachable), after signalling entered once.
type blockedPublishStore struct {
	*redisstore.Store
	entered chan struct{}
	release chan struct{}
}

func (s blockedPublishStore) PublishBroadcast(ctx context.Context, msg []byte) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.PublishBroadcast(ctx, msg)
}

// Shutdown is not bounded by its context while the broadcast tap's
// goroutine is publishing: stopTap (broadcast.go) waits for the goroutine
// with no deadline, and the goroutine's PublishBroadcast runs under
// CleanupTimeout (5 s by default), not Shutdown's ctx; then, with
// broadcasts still queued, run's select may take another before it sees
// stop. So a replica whose store hangs keeps Shutdown(ctx of 200 ms) for
// up to CleanupTimeout (here 1 minute) per queued broadcast.
func TestReview11_ShutdownNotBoundedByBlockedBroadcastPublish(t *testing.T) {
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	blocked := blockedPublishStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(blocked.release) }) }
	t.Cleanup(release)
	c.wrap = func(name string, s sessionstore.Store) sessionstore.Store {
		blocked.Store = s.(*redisstore.Store)
		return blocked
	}
	r := c.start("A", streamable.Config{HeartbeatInterval: clusterHeartbeat, CleanupTimeout: time.Minute}, redisstore.Options{Prefix: "t" + rand.Text()[:8] + ":"})
	r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
	<-blocked.entered
	down := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		down <- r.h.Shutdown(ctx)
	}()
	select {
	case <-down:
	case <-time.After(wait):
		release()
		<-down
		t.Fatalf("Shutdown with a 200 ms context had not returned after %v: it waits for the tap's blocked publish", wait)
	}
}
