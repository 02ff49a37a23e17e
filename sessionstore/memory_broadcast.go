package sessionstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// memoryBroadcast is Memory's broadcast bus: an in-process fan-out with
// its own lock, so broadcasting never waits on session operations.
type memoryBroadcast struct {
	mu      sync.Mutex
	subs    map[*memoryBroadcastSub]struct{}
	dropped atomic.Uint64
}

// PublishBroadcast implements Broadcaster. It gives msg (one copy, shared
// by the subscriptions) to every broadcast subscription with room in its
// buffer of MemoryBusBuffer messages; one whose buffer is full misses it,
// which Dropped counts. It never blocks and never fails.
func (m *Memory) PublishBroadcast(_ context.Context, msg []byte) error {
	b := &m.bcast
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.subs) == 0 {
		return nil
	}
	msg = slices.Clone(msg)
	for s := range b.subs {
		select {
		case s.ch <- msg:
		default:
			b.dropped.Add(1)
		}
	}
	return nil
}

// SubscribeBroadcasts implements Broadcaster. The subscription gets every
// message published after SubscribeBroadcasts returns and none before; it
// buffers MemoryBusBuffer messages. It never fails.
func (m *Memory) SubscribeBroadcasts(context.Context) (Subscription, error) {
	b := &m.bcast
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = make(map[*memoryBroadcastSub]struct{})
	}
	s := &memoryBroadcastSub{b: b, ch: make(chan []byte, MemoryBusBuffer)}
	b.subs[s] = struct{}{}
	return s, nil
}

// Dropped reports how many broadcast messages Memory has dropped because a
// subscription's buffer was full. It counts broadcasts only: Publish and
// PublishTopic report their own drops to the caller, as ErrBusFull.
func (m *Memory) Dropped() uint64 { return m.bcast.dropped.Load() }

// BroadcastsDropped implements BroadcastDropCounter: the same count as
// Dropped.
func (m *Memory) BroadcastsDropped() uint64 { return m.bcast.dropped.Load() }

type memoryBroadcastSub struct {
	b      *memoryBroadcast
	ch     chan []byte
	closed bool // guarded by b.mu
}

func (s *memoryBroadcastSub) Messages() <-chan []byte { return s.ch }

func (s *memoryBroadcastSub) Close() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if !s.closed {
		s.closed = true
		delete(s.b.subs, s)
		close(s.ch)
	}
	return nil
}

var _ Broadcaster = (*Memory)(nil)
