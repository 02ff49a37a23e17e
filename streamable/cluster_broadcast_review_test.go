package streamable_test

import (
	"context"
	"crypto/rand"
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

// Tests from a second cold review of the 2026-07-28 transport and of
// broadcasts across replicas: each failed on the code under review and guards its fix.

// With replicas, a broadcast for a session without a stream is kept by one
// replica only, the one that created it, however many held its stream
// before: the session's next GET stream gets it once.
func TestClusterBroadcastForAStreamlessSessionKeptOnce(t *testing.T) {
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, markerFilterSetup)
	cl := c.session(0) // created on A: A holds it last
	g := c.stream(c.client(1, cl))
	g.Close() // B held its stream last, and let it go
	ctx := testutil.Context(t, wait)
	testutil.Eventually(t, wait, "B lets the session's stream go", func() bool {
		_, held, err := c.replicas[0].store.StreamHolder(ctx, cl.SessionID)
		return err == nil && !held && c.replicas[1].h.Stats().GetStreams == 0
	})
	c.replicas[2].mcp.SendNotificationToAllClients("custom/once", map[string]any{"k": 1})
	// Both A and B keep it for the session (each thinks it held the stream
	// last); on the code as reviewed that is two copies.
	testutil.Eventually(t, wait, "the broadcast is kept for the session without a stream", func() bool {
		return c.replicas[0].h.Stats().QueuedMessages+c.replicas[1].h.Stats().QueuedMessages > 0
	})
	s := c.stream(c.client(2, cl))
	testutil.Eventually(t, wait, "what A and B kept is carried to the stream on C", func() bool {
		return c.replicas[0].h.Stats().QueuedMessages+c.replicas[1].h.Stats().QueuedMessages == 0
	})
	c.replicas[2].mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 1)
	if n := got[`custom/once {"k":1}`]; n != 1 {
		t.Fatalf("the session's next GET stream got the broadcast %d times, want once (all: %v)", n, got)
	}
}

// gatedStore is a redisstore.Store whose broadcast subscriptions the test
// can end, and whose SubscribeBroadcasts, PublishBroadcast and (once)
// StreamHolder it can hold at a r2gate: each armed r2gate signals entered,
// then waits for release or the call's context.
type gatedStore struct {
	*redisstore.Store
	tb         testing.TB
	mu         sync.Mutex
	subs       []sessionstore.Subscription
	subscribed int
	sub, pub   *r2gate
	holder     *r2gate // held once: disarmed by the first call it holds
}

type r2gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newR2Gate() *r2gate {
	return &r2gate{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *r2gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *r2gate) pass(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *gatedStore) arm(which **r2gate) *r2gate {
	g := newR2Gate()
	s.mu.Lock()
	*which = g
	s.mu.Unlock()
	s.tb.Cleanup(g.open)
	return g
}

func (s *gatedStore) SubscribeBroadcasts(ctx context.Context) (sessionstore.Subscription, error) {
	s.mu.Lock()
	g := s.sub
	s.mu.Unlock()
	if err := g.pass(ctx); err != nil {
		return nil, err
	}
	sub, err := s.Store.SubscribeBroadcasts(ctx)
	if err == nil {
		s.mu.Lock()
		s.subs = append(s.subs, sub)
		s.subscribed++
		s.mu.Unlock()
	}
	return sub, err
}

func (s *gatedStore) PublishBroadcast(ctx context.Context, msg []byte) error {
	s.mu.Lock()
	g := s.pub
	s.mu.Unlock()
	if err := g.pass(ctx); err != nil {
		return err
	}
	return s.Store.PublishBroadcast(ctx, msg)
}

func (s *gatedStore) StreamHolder(ctx context.Context, id string) (sessionstore.Lease, bool, error) {
	s.mu.Lock()
	g := s.holder
	s.holder = nil
	s.mu.Unlock()
	if err := g.pass(ctx); err != nil {
		return sessionstore.Lease{}, false, err
	}
	return s.Store.StreamHolder(ctx, id)
}

// endSubscription ends the listener's current broadcast subscription, as
// a Broadcaster's subscription may end.
func (s *gatedStore) endSubscription() {
	s.mu.Lock()
	sub := s.subs[len(s.subs)-1]
	s.mu.Unlock()
	_ = sub.Close()
}

func (s *gatedStore) subscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed
}

// startGated starts replica A of a cluster on a gatedStore.
func startGated(t *testing.T) (*cluster, *replica, *gatedStore) {
	c := &cluster{t: t, redis: testutil.StartRedisServer(t), setup: []func(*server.MCPServer){markerFilterSetup}}
	gs := &gatedStore{tb: t}
	c.wrap = func(name string, s sessionstore.Store) sessionstore.Store {
		gs.Store = s.(*redisstore.Store)
		return gs
	}
	r := c.start("A", streamable.Config{HeartbeatInterval: clusterHeartbeat, CleanupTimeout: wait},
		redisstore.Options{Prefix: "t" + rand.Text()[:8] + ":"})
	c.replicas = append(c.replicas, r)
	testutil.Eventually(t, wait, "A subscribes to the store's broadcasts", func() bool { return gs.subscriptions() == 1 })
	return c, r, gs
}

func waitEntered(t *testing.T, g *r2gate, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(wait):
		t.Fatalf("not within %v: %s", wait, what)
	}
}

// A broadcast raised while the listener is subscribed, whose subscription
// ends before the tap takes it, still reaches this replica's GET streams:
// the tap alone decides where it goes (here, not subscribed any more).
func TestClusterBroadcastRaisedAsTheListenerUnsubscribesDelivered(t *testing.T) {
	c, r, gs := startGated(t)
	cl := c.session(0)
	get := c.stream(c.client(0, cl))
	listen := openListenOn(t, r.ts.URL, "L", map[string]any{"toolsListChanged": true})
	pub := gs.arm(&gs.pub)
	r.mcp.SendNotificationToAllClients("custom/first", map[string]any{"i": 1})
	waitEntered(t, pub, "the tap publishes the first broadcast")
	// Raised while subscribed: mcp-go skips the session; the tap holds it.
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, map[string]any{"i": 2})
	sub := gs.arm(&gs.sub)
	gs.endSubscription()
	waitEntered(t, sub, "the listener subscribes again")
	pub.open()
	// The tap took the second broadcast: the listen stream has it.
	if m, err := listen.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.IsNotification() }); err != nil ||
		m.Method != mcp.MethodNotificationToolsListChanged {
		t.Fatalf("listen stream: %s (%v)", m.Method, err)
	}
	sub.open()
	testutil.Eventually(t, wait, "the listener is subscribed again", func() bool { return gs.subscriptions() == 2 })
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, get, mcp.MethodNotificationResourceUpdated, 1)
	if n := got[mcp.MethodNotificationToolsListChanged+` {"i":2}`]; n != 1 {
		t.Fatalf("the GET stream got the broadcast raised before the subscription ended %d times, want once (all: %v)", n, got)
	}
}

// A broadcast raised while the listener is not subscribed, which
// subscribes again before the tap takes it, reaches each GET stream once:
// mcp-go never delivers to sessions itself with a shared Broadcaster.
func TestClusterBroadcastRaisedAsTheListenerResubscribesDeliveredOnce(t *testing.T) {
	c, r, gs := startGated(t)
	cl := c.session(0)
	get := c.stream(c.client(0, cl))
	pub := gs.arm(&gs.pub)
	r.mcp.SendNotificationToAllClients("custom/first", map[string]any{"i": 1})
	waitEntered(t, pub, "the tap publishes the first broadcast")
	sub := gs.arm(&gs.sub)
	gs.endSubscription()
	waitEntered(t, sub, "the listener subscribes again")
	// Not subscribed: mcp-go delivers to the session itself, and the tap
	// holds it behind the first.
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, map[string]any{"i": 2})
	sub.open()
	testutil.Eventually(t, wait, "the listener is subscribed again", func() bool { return gs.subscriptions() == 2 })
	pub.open()
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, get, mcp.MethodNotificationResourceUpdated, 1)
	if n := got[mcp.MethodNotificationToolsListChanged+` {"i":2}`]; n != 1 {
		t.Fatalf("the GET stream got the broadcast raised while not subscribed %d times, want once (all: %v)", n, got)
	}
}

// One replica's broadcasts keep their order for a session whose stream
// opens while the first is being kept for it: the later ones go through
// the idle deliverer too while it holds one for the session.
func TestClusterBroadcastsKeepOrderAsAStreamOpens(t *testing.T) {
	c, r, gs := startGated(t)
	cl := c.session(0)
	listen := openListenOn(t, r.ts.URL, "L", map[string]any{"toolsListChanged": true})
	holder := gs.arm(&gs.holder)
	r.mcp.SendNotificationToAllClients("custom/order", map[string]any{"i": 1})
	waitEntered(t, holder, "the idle deliverer asks who holds the session's stream")
	get := c.stream(c.client(0, cl))
	r.mcp.SendNotificationToAllClients("custom/order", map[string]any{"i": 2})
	// The listener takes broadcasts in order: once the listen stream has
	// the next one, the second went to the GET stream's queue.
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
	if m, err := listen.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.IsNotification() }); err != nil ||
		m.Method != mcp.MethodNotificationToolsListChanged {
		t.Fatalf("listen stream: %s (%v)", m.Method, err)
	}
	holder.open()
	ctx := testutil.Context(t, wait)
	var order []string
	for len(order) < 2 {
		m, err := get.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "custom/order" })
		if err != nil {
			t.Fatalf("after %v: %v", order, err)
		}
		order = append(order, string(m.Params))
	}
	if order[0] != `{"i":1}` {
		t.Fatalf("the GET stream got %v: the broadcast raised first arrived second", order)
	}
}
