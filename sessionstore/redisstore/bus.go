package redisstore

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// busConfig is what a bus needs from its Store.
type busConfig struct {
	prefix     string // channel name = prefix + session id
	wakePrefix string
	buffer     int
	bcastBuf   int // a broadcast subscription's buffer
	interval   time.Duration
	opTimeout  time.Duration
	// notLive returns those of the ids whose session is not live.
	notLive func(ctx context.Context, ids []string) ([]string, error)
	// broadcast is the broadcast bus's channel (broadcast.go): not a
	// session's, so the re-checks leave it alone and no frame ends it.
	broadcast string
}

// bus multiplexes a Store's subscriptions over one pub/sub connection,
// subscribing each session's channel once however many local
// subscriptions it has. Only the dispatcher goroutine (dispatcher.go) uses
// the connection: callers record what they want in chans and dirty, and a
// Subscribe that needs the server wakes the dispatcher with a message on
// the bus's own wake channel. So no caller ever waits on the connection,
// whose lock go-redis holds while it reconnects.
type bus struct {
	busConfig
	client redis.UniversalClient
	wake   string // this bus's wake-up channel

	ctx    context.Context // ends with close
	cancel context.CancelFunc
	exited chan struct{} // closed when the dispatcher has returned

	mu     sync.Mutex
	closed bool
	ps     *redis.PubSub // written by the dispatcher under mu; it reads it unlocked
	chans  map[string]*chanState
	// dirty holds the channels whose subscription on the server may not
	// match chans; the dispatcher syncs them.
	dirty map[string]struct{}
	// onWire holds the channels the dispatcher has subscribed (and
	// go-redis resubscribes on a new connection).
	onWire map[string]struct{}
	// acks counts, per channel, the SUBSCRIBEs sent whose confirmation has
	// not arrived: a channel is confirmed by the last one's.
	acks map[string]int

	dropped      atomic.Uint64
	bcastDropped atomic.Uint64 // of dropped, the broadcasts
}

// chanState is one subscribed channel and its local subscriptions.
type chanState struct {
	subs      map[*subscription]struct{}
	confirmed bool
	ready     chan struct{} // closed once the server has the subscription
	ended     chan struct{} // closed when the state is dropped
}

func newBus(client redis.UniversalClient, cfg busConfig) *bus {
	ctx, cancel := context.WithCancel(context.Background())
	b := &bus{
		busConfig: cfg,
		client:    client,
		wake:      cfg.wakePrefix + rand.Text(),
		ctx:       ctx,
		cancel:    cancel,
		exited:    make(chan struct{}),
		ps:        client.Subscribe(ctx), // no channel: connects on first use
		chans:     make(map[string]*chanState),
		dirty:     make(map[string]struct{}),
		onWire:    make(map[string]struct{}),
		acks:      make(map[string]int),
	}
	go b.run()
	return b
}

// subscribe adds a local subscription to channel name and waits until the
// server has the channel subscribed, asking the dispatcher to subscribe it
// if it is not.
func (b *bus) subscribe(ctx context.Context, name string) (*subscription, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	st := b.chans[name]
	if st == nil {
		st = &chanState{subs: make(map[*subscription]struct{}), ready: make(chan struct{}), ended: make(chan struct{})}
		b.chans[name] = st
		if _, ok := b.onWire[name]; ok && b.acks[name] == 0 {
			// Still subscribed from an earlier local subscription.
			st.confirmed = true
			close(st.ready)
		} else {
			b.dirty[name] = struct{}{}
		}
	}
	size := b.buffer
	if name == b.broadcast {
		size = b.bcastBuf
	}
	sub := &subscription{b: b, st: st, name: name, ch: make(chan []byte, size)}
	st.subs[sub] = struct{}{}
	wake := !st.confirmed
	b.mu.Unlock()
	if wake {
		if err := b.client.Publish(ctx, b.wake, "").Err(); err != nil {
			sub.Close()
			return nil, err
		}
	}
	select {
	case <-st.ready:
		return sub, nil
	case <-st.ended:
		if b.ctx.Err() != nil {
			return nil, ErrClosed
		}
		return sub, nil // closed already; the caller's liveness check says why
	case <-ctx.Done():
		sub.Close()
		return nil, ctx.Err()
	case <-b.ctx.Done():
		sub.Close()
		return nil, ErrClosed
	}
}

// dropLocked forgets a channel's state, closing ended, and leaves the
// unsubscribing to the dispatcher. Callers hold b.mu.
func (b *bus) dropLocked(name string, st *chanState) {
	if b.chans[name] == st {
		delete(b.chans, name)
		close(st.ended)
		b.dirty[name] = struct{}{}
	}
}

// end closes every local subscription to channel name: the session was
// terminated or is gone.
func (b *bus) end(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.chans[name]
	if st == nil {
		return
	}
	for sub := range st.subs {
		sub.closeLocked()
	}
	b.dropLocked(name, st)
}

// awaitEnd waits until the dispatcher has ended channel name (on the
// termination frame, after the messages before it), or ends it when ctx
// does.
func (b *bus) awaitEnd(ctx context.Context, name string) {
	b.mu.Lock()
	st := b.chans[name]
	confirmed := st != nil && st.confirmed
	b.mu.Unlock()
	if st == nil {
		return
	}
	if !confirmed {
		// Its SUBSCRIBE may reach the server after the frame did.
		b.end(name)
		return
	}
	select {
	case <-st.ended:
	case <-ctx.Done():
		b.end(name)
	}
}

// close stops the dispatcher, closes the pub/sub connection and every
// local subscription.
func (b *bus) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.exited
		return
	}
	b.closed = true
	ps := b.ps
	b.mu.Unlock()
	b.cancel()
	_ = ps.Close() // unblocks the dispatcher's read
	<-b.exited
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, st := range b.chans {
		for sub := range st.subs {
			sub.closeLocked()
		}
		b.dropLocked(name, st)
	}
}

// subscription is a local subscription to a session's channel (or a
// topic of it), or to the broadcast channel.
type subscription struct {
	b      *bus
	st     *chanState
	name   string
	ch     chan []byte
	closed bool // guarded by b.mu
}

var _ sessionstore.Subscription = (*subscription)(nil)

// Messages implements sessionstore.Subscription.
func (s *subscription) Messages() <-chan []byte { return s.ch }

// Close implements sessionstore.Subscription. It does not wait for Redis:
// the dispatcher unsubscribes a channel whose last local subscription
// closed.
func (s *subscription) Close() error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closeLocked()
	if len(s.st.subs) == 0 {
		b.dropLocked(s.name, s.st)
	}
	return nil
}

// closeLocked closes the channel and detaches s. Callers hold b.mu.
func (s *subscription) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	close(s.ch)
	delete(s.st.subs, s)
}
