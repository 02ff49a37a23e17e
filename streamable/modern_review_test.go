package streamable_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
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

// Tests from a cold review of the 2026-07-28 transport, listen streams and
// broadcasts: each failed on the code under review, and guards its fix.

// With replicas, a broadcast raised while a session has no GET stream open
// (between two GETs, or before its first) reaches its next stream: the
// replica that held its stream last (or created it) keeps it in the
// session's queue, and the pump carries it over, as alone the session
// holds it (TestBlackboxModernSingleReplicaBroadcastWithoutGetStreamIsHeld).
func TestClusterBroadcastWaitsForASessionsNextStream(t *testing.T) {
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

// Listen streams do not hold places in MaxSessions (they are capped by
// MaxListenStreams): two open listen streams with MaxSessions 2 leave room
// for session-era clients.
func TestListenStreamsDoNotUseUpMaxSessions(t *testing.T) {
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

// A listen filter naming more than MaxSubscriptionsPerSession resources,
// duplicates counted, is refused with -32602 and the request's id: mcp-go
// would keep the list whole in the filter and the acknowledgement, and
// check each entry.
func TestListenFilterOverTheSubscriptionBoundRefused(t *testing.T) {
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
	resp := r.modernPost(ctx, t, modernMsg("D", "subscriptions/listen",
		map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}}, nil), nil)
	if resp.Status != http.StatusBadRequest {
		t.Fatalf("a listen asking for %d resource subscriptions (one distinct URI) answered %d, want 400", n, resp.Status)
	}
	if id, code, _, _ := rpcErrorOf(t, resp); id != `"D"` || code != mcp.INVALID_PARAMS {
		t.Fatalf("id %s code %d", id, code)
	}
}

// A POST refused because the server is shutting down gets its 503 with the
// id of a body that arrives at once (refuseWithID).
func TestShuttingDownRefusalEchoesTheID(t *testing.T) {
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
	held := r.modernCallAsync(ctx, t, 1, "hold")
	<-started
	down := r.shutdownAsync()
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

// Shutdown is bounded by its context while the broadcast tap's goroutine
// publishes to a store that hangs: the publication runs under a context
// Shutdown cancels, the goroutine checks stop before taking another
// broadcast, and the wait for it is bounded by ctx.
func TestShutdownBoundedWhileABroadcastPublishHangs(t *testing.T) {
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

// Three replicas raising 999 distinct broadcasts at once (resource updates
// of distinct URIs, 333 each) all reach a listen stream on each replica:
// broadcast subscriptions have a buffer of their own
// (redisstore.Options.BroadcastBuffer), larger than the session bus's
// (BusBuffer, small here), and what a full one drops is counted in
// Stats.DroppedMessages and logged.
func TestClusterBroadcastBurstArrivesWhole(t *testing.T) {
	// A bus buffer of 16 makes the loss certain on any machine; at the
	// default (256) it happens under load (2 of 4 runs here under -race
	// with other work on the machine lost 8 and 69 of the 999).
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{BusBuffer: 16}, func(s *server.MCPServer) {
		markerFilterSetup(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://b/{id}", "burst"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	const n = 999
	uris := make([]string, 0, n+1)
	for i := range n {
		uris = append(uris, fmt.Sprintf("test://b/%d", i))
	}
	uris = append(uris, "test://b/end")
	var listens []*testutil.Stream
	for i, r := range c.replicas {
		listens = append(listens, openListenOn(t, r.ts.URL, fmt.Sprintf("B%d", i), map[string]any{"resourceSubscriptions": uris}))
	}
	var wg sync.WaitGroup
	for k, r := range c.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += len(c.replicas) {
				r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uris[i]})
			}
		}()
	}
	wg.Wait()
	for _, r := range c.replicas { // after each replica's own burst
		r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://b/end"})
	}
	for i, s := range listens {
		ctx := testutil.Context(t, wait)
		got := map[string]bool{}
		for ends := 0; ends < 1; {
			m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
			if err != nil {
				t.Fatalf("listen %d: %v after %d of %d updates", i, err, len(got), n)
			}
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.URI == "test://b/end" {
				ends++
				continue
			}
			got[p.URI] = true
		}
		// The end marker of every replica arrived once; wait until all
		// updates (raised before those markers) are in, or the stream
		// stalls.
		for len(got) < n {
			m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
			if err != nil {
				var diag []string
				for _, r := range c.replicas {
					diag = append(diag, fmt.Sprintf("%s: bus dropped %d, %+v", r.name, r.store.Dropped(), r.h.Stats()))
				}
				t.Fatalf("listen %d: %d of %d distinct updates arrived (%v); %v", i, len(got), n, err, diag)
			}
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(m.Params, &p)
			got[p.URI] = true
		}
	}
	for _, r := range c.replicas {
		if d := r.store.Dropped(); d != 0 {
			t.Fatalf("replica %s's bus dropped %d messages", r.name, d)
		}
	}
}

// A listen stream carries only the acknowledgement (first), what the
// filter asks for, and the final result: a notification the request itself
// sends (here a hook logging every request to its client, as an
// application's middleware may) is not written on it.
func TestListenStreamCarriesNothingItsRequestSends(t *testing.T) {
	var srv *server.MCPServer
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		srv = s
		markerFilterSetup(s)
		hooks := &server.Hooks{}
		hooks.AddBeforeAny(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any) {
			_ = srv.SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "data": "handling " + string(method)})
		})
		server.WithHooks(hooks)(s)
	})
	ctx := testutil.Context(t, wait)
	l := r.openListen(ctx, t, "L", map[string]any{"toolsListChanged": true})
	first := l.next(t)
	if first.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message on the listen stream: %s %s (tagged %s), want the acknowledgement",
			first.Method, first.Params, subscriptionID(t, first))
	}
}

// A replica started while the store is unreachable joins the broadcast bus
// once the store is back: its listener keeps subscribing with backoff (New
// waits at most firstSubscribeWait), and broadcasts raised on another
// replica then reach its listen streams.
func TestClusterReplicaStartedDuringOutageJoinsBroadcasts(t *testing.T) {
	c := &cluster{t: t, redis: testutil.StartRedisServer(t), setup: []func(*server.MCPServer){markerFilterSetup}}
	prefix := "t" + rand.Text()[:8] + ":"
	c.replicas = append(c.replicas, c.start("A", streamable.Config{HeartbeatInterval: clusterHeartbeat}, redisstore.Options{Prefix: prefix}))
	resume := c.pauseRedis()
	c.replicas = append(c.replicas, c.start("D", streamable.Config{HeartbeatInterval: clusterHeartbeat, CleanupTimeout: 300 * time.Millisecond},
		redisstore.Options{Prefix: prefix}))
	resume()
	// The store is back: a session works on D, so D uses it again.
	c.session(1)
	listen := openListenOn(t, c.replicas[1].ts.URL, "D1", map[string]any{"toolsListChanged": true})
	control := openListenOn(t, c.replicas[0].ts.URL, "A1", map[string]any{"toolsListChanged": true})
	c.replicas[0].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"from": "A"})
	if m, err := control.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.IsNotification() }); err != nil ||
		m.Method != "notifications/tools/list_changed" {
		t.Fatalf("A's own listen stream: %s (%v)", m.Method, err) // the bus works for A
	}
	// D's listener subscribes again within its backoff (at most 2 s):
	// broadcasts raised on A reach D's listen stream from then on.
	deadline := time.Now().Add(wait)
	for i := 0; ; i++ {
		c.replicas[0].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"from": "A", "i": i})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		m, err := listen.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
		cancel()
		if err == nil {
			if m.Method != "notifications/tools/list_changed" {
				t.Fatalf("D's listen stream got %s", m.Method)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broadcasts raised on A after the store came back never reached D's listen stream: %v", err)
		}
	}
}

// With replicas, a broadcast reaches clients as it was raised: an integer
// parameter beyond 2^53 arrives exact (decoded with json.Number), as it
// does alone.
func TestClusterBroadcastKeepsLargeIntegers(t *testing.T) {
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, markerFilterSetup)
	cl := c.session(0)
	get := c.stream(c.client(0, cl))
	const big int64 = 1<<53 + 1 // 9007199254740993
	c.replicas[0].mcp.SendNotificationToAllClients("custom/big", map[string]any{"n": big})
	m, err := get.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.Method == "custom/big" })
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		N json.RawMessage `json:"n"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	if string(p.N) != "9007199254740993" {
		t.Fatalf("the broadcast's n arrived as %s, want 9007199254740993", p.N)
	}
}
