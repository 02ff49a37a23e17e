package sessionstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// TombstoneTTL is how long Memory remembers a terminated session whose
// record had no expiry.
const TombstoneTTL = time.Hour

// MemoryBusBuffer is how many messages a Memory subscription buffers before
// Publish reports it as full.
const MemoryBusBuffer = 256

// Memory is the in-process Store, the default for a single replica. The
// zero value is not usable; call NewMemory.
type Memory struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*memoryEntry
}

type memoryEntry struct {
	rec        Record
	ttl        time.Duration
	terminated bool
	lease      *Lease
	subs       map[*memorySub]struct{}
}

// NewMemory returns an empty in-memory store. now supplies the time for
// expiries; time.Now when nil.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, sessions: make(map[string]*memoryEntry)}
}

func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

func lapsed(now, at time.Time) bool { return !at.IsZero() && !now.Before(at) }

// lookup returns the entry for id, dropping it if it has lapsed. Callers
// hold m.mu.
func (m *Memory) lookup(id string) (*memoryEntry, error) {
	e, ok := m.sessions[id]
	if !ok {
		return nil, ErrNotFound
	}
	if lapsed(m.now(), e.rec.ExpiresAt) {
		m.drop(id, e)
		return nil, ErrNotFound
	}
	if e.terminated {
		return e, ErrTerminated
	}
	return e, nil
}

func (m *Memory) drop(id string, e *memoryEntry) {
	for s := range e.subs {
		s.closeLocked()
	}
	delete(m.sessions, id)
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, rec Record, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(rec.ID); err != ErrNotFound {
		return fmt.Errorf("create session %q: %w", rec.ID, ErrExists)
	}
	now := m.now()
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	rec.ExpiresAt = expiry(now, ttl)
	rec.ClientInfo = slices.Clone(rec.ClientInfo)
	m.sessions[rec.ID] = &memoryEntry{rec: rec, ttl: ttl, subs: make(map[*memorySub]struct{})}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return Record{}, err
	}
	rec := e.rec
	rec.ClientInfo = slices.Clone(rec.ClientInfo)
	return rec, nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, rec Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(rec.ID)
	if err != nil {
		return err
	}
	e.rec.ProtocolVersion = rec.ProtocolVersion
	e.rec.ClientInfo = slices.Clone(rec.ClientInfo)
	return nil
}

// Touch implements Store.
func (m *Memory) Touch(_ context.Context, id string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	e.ttl = ttl
	e.rec.ExpiresAt = expiry(m.now(), ttl)
	return nil
}

// Terminate implements Store.
func (m *Memory) Terminate(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err == ErrTerminated {
		return nil
	}
	if err != nil {
		return err
	}
	e.terminated = true
	e.lease = nil
	for s := range e.subs {
		s.closeLocked()
	}
	// The tombstone answers ErrTerminated for as long as the session would
	// have lived (TombstoneTTL for a session without expiry), then lapses.
	ttl := e.ttl
	if ttl <= 0 {
		ttl = TombstoneTTL
	}
	e.rec.ExpiresAt = expiry(m.now(), ttl)
	return nil
}

// Count implements Store.
func (m *Memory) Count(_ context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id := range m.sessions {
		if _, err := m.lookup(id); err == nil {
			n++
		}
	}
	return n, nil
}

// AcquireStream implements Store.
func (m *Memory) AcquireStream(_ context.Context, id, holder string, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return Lease{}, err
	}
	now := m.now()
	if e.lease != nil && !lapsed(now, e.lease.ExpiresAt) && e.lease.Holder != holder {
		return *e.lease, ErrStreamHeld
	}
	l := Lease{SessionID: id, Holder: holder, ExpiresAt: expiry(now, ttl)}
	e.lease = &l
	return l, nil
}

// RenewStream implements Store.
func (m *Memory) RenewStream(_ context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(lease.SessionID)
	if err != nil {
		return Lease{}, ErrLeaseLost
	}
	now := m.now()
	if e.lease == nil || e.lease.Holder != lease.Holder || lapsed(now, e.lease.ExpiresAt) {
		return Lease{}, ErrLeaseLost
	}
	e.lease.ExpiresAt = expiry(now, ttl)
	return *e.lease, nil
}

// ReleaseStream implements Store.
func (m *Memory) ReleaseStream(_ context.Context, lease Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.sessions[lease.SessionID]
	if ok && e.lease != nil && e.lease.Holder == lease.Holder {
		e.lease = nil
	}
	return nil
}

// StreamHolder implements Store.
func (m *Memory) StreamHolder(_ context.Context, id string) (Lease, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return Lease{}, false, err
	}
	if e.lease == nil || lapsed(m.now(), e.lease.ExpiresAt) {
		return Lease{}, false, nil
	}
	return *e.lease, true, nil
}

// ErrBusFull is returned by Memory.Publish when a subscriber's buffer is
// full; that subscriber did not get the message.
var ErrBusFull = fmt.Errorf("sessionstore: subscriber buffer full (%d messages)", MemoryBusBuffer)

// Publish implements Store.
func (m *Memory) Publish(_ context.Context, id string, msg []byte) error {
	return m.publish(id, "", msg)
}

// PublishTopic implements Store.
func (m *Memory) PublishTopic(_ context.Context, id, topic string, msg []byte) error {
	if topic == "" {
		return fmt.Errorf("publish to session %q: empty topic", id)
	}
	return m.publish(id, topic, msg)
}

func (m *Memory) publish(id, topic string, msg []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	var full error
	got := 0
	for s := range e.subs {
		if s.topic != topic {
			continue
		}
		got++
		select {
		case s.ch <- msg:
		default:
			full = ErrBusFull
		}
	}
	if got == 0 {
		return fmt.Errorf("publish to session %q: %w", id, ErrNoSubscribers)
	}
	if full != nil {
		return fmt.Errorf("publish to session %q: %w", id, full)
	}
	return nil
}

// Subscribe implements Store.
func (m *Memory) Subscribe(_ context.Context, id string) (Subscription, error) {
	return m.subscribe(id, "")
}

// SubscribeTopic implements Store.
func (m *Memory) SubscribeTopic(_ context.Context, id, topic string) (Subscription, error) {
	if topic == "" {
		return nil, fmt.Errorf("subscribe to session %q: empty topic", id)
	}
	return m.subscribe(id, topic)
}

func (m *Memory) subscribe(id, topic string) (Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	s := &memorySub{m: m, e: e, topic: topic, ch: make(chan []byte, MemoryBusBuffer)}
	e.subs[s] = struct{}{}
	return s, nil
}

type memorySub struct {
	m      *Memory
	e      *memoryEntry
	topic  string // "" for the session's bus itself
	ch     chan []byte
	closed bool
}

func (s *memorySub) Messages() <-chan []byte { return s.ch }

func (s *memorySub) Close() error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.closeLocked()
	return nil
}

func (s *memorySub) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.e.subs, s)
	close(s.ch)
}

var _ Store = (*Memory)(nil)
