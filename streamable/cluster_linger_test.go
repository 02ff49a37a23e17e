package streamable_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// gatedBusStore holds the Close of one session-bus subscription (the next
// one Subscribe makes once mark is set) until release is closed.
type gatedBusStore struct {
	sessionstore.Store
	mark    atomic.Bool
	markT   atomic.Bool                               // the next SubscribeTopic is kept in topic
	topic   atomic.Pointer[sessionstore.Subscription] // the first stream's topic
	entered chan struct{}
	release chan struct{}
}

func (s *gatedBusStore) Subscribe(ctx context.Context, id string) (sessionstore.Subscription, error) {
	sub, err := s.Store.Subscribe(ctx, id)
	if err != nil || !s.mark.CompareAndSwap(true, false) {
		return sub, err
	}
	return &gatedSub{Subscription: sub, s: s}, nil
}

func (s *gatedBusStore) SubscribeTopic(ctx context.Context, id, topic string) (sessionstore.Subscription, error) {
	sub, err := s.Store.SubscribeTopic(ctx, id, topic)
	if err == nil && s.markT.CompareAndSwap(true, false) {
		s.topic.Store(&sub)
	}
	return sub, err
}

type gatedSub struct {
	sessionstore.Subscription
	s    *gatedBusStore
	once atomic.Bool
}

func (g *gatedSub) Close() error {
	if g.once.CompareAndSwap(false, true) {
		close(g.s.entered)
		select {
		case <-g.s.release:
		case <-time.After(wait):
		}
	}
	return g.Subscription.Close()
}

// A GET that reconnects to the same replica while its previous stream is
// still ending (between freeing the slot and starting its lingering topic)
// gets what a pump sent to the previous stream: the linger it must stop is
// registered before the slot is free, so what it keeps is in the
// carry-over the new stream writes first, not stuck there while that
// stream lives.
func TestClusterReconnectDuringStreamEndGetsWhatTheLingerKeeps(t *testing.T) {
	gs := &gatedBusStore{entered: make(chan struct{}), release: make(chan struct{})}
	var released atomic.Bool
	releaseClose := func() {
		if released.CompareAndSwap(false, true) {
			close(gs.release)
		}
	}
	t.Cleanup(releaseClose)
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	c.wrap = func(_ string, s sessionstore.Store) sessionstore.Store {
		gs.Store = s
		return gs
	}
	prefix := "t" + rand.Text()[:8] + ":"
	c.replicas = append(c.replicas, c.start("A", streamable.Config{HeartbeatInterval: clusterHeartbeat}, redisstore.Options{Prefix: prefix}))
	store := c.replicas[0].store
	cl := c.session(0)
	ctx := testutil.Context(t, 3*wait)

	gs.mark.Store(true)  // the first stream's bus subscription
	gs.markT.Store(true) // and its topic
	s1 := c.stream(cl)
	old, ok, err := store.StreamHolder(ctx, cl.SessionID)
	if err != nil || !ok {
		t.Fatalf("StreamHolder: %v %v", ok, err)
	}
	s1.Close()
	select {
	case <-gs.entered: // the first stream released its lease and freed the slot
	case <-ctx.Done():
		t.Fatal("the first stream did not end")
	}

	type opened struct {
		s   *testutil.Stream
		err error
	}
	got := make(chan opened, 1)
	go func() {
		s, err := cl.OpenStream(context.Background())
		got <- opened{s, err}
	}()
	// The second stream holds the lease: a pump that read the old holder
	// before its release now sends to the old stream's topic.
	deadline := time.Now().Add(wait)
	for {
		l, ok, err := store.StreamHolder(ctx, cl.SessionID)
		if err == nil && ok && l.Holder != old.Holder {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second stream did not take the lease")
		}
		time.Sleep(5 * time.Millisecond) // bounded poll of the store
	}
	const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"sent-to-the-old-stream"}}`
	if err := store.PublishTopic(ctx, cl.SessionID, old.Holder, []byte(note)); err != nil {
		t.Fatalf("PublishTopic to the old stream: %v", err)
	}
	// Redis delivers it to the old topic's buffer; wait until it is there.
	topic := gs.topic.Load()
	if topic == nil {
		t.Fatal("the first stream's topic was not seen")
	}
	for len((*topic).Messages()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the message did not reach the old stream's topic")
		}
		time.Sleep(5 * time.Millisecond) // bounded poll of the buffer
	}
	releaseClose()
	var o opened
	select {
	case o = <-got:
	case <-ctx.Done():
		t.Fatal("the second GET did not answer")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Cleanup(o.s.Close)
	if o.s.Status != http.StatusOK {
		t.Fatalf("second GET: status %d: %s", o.s.Status, o.s.Body)
	}
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second) // thrice the linger
	defer cancel()
	if _, err := o.s.NextMatching(mctx, func(m testutil.Message) bool {
		return strings.Contains(string(m.Params), "sent-to-the-old-stream")
	}); err != nil {
		t.Fatalf("the message sent to the old stream's topic never reached the new stream: %v", err)
	}
}
