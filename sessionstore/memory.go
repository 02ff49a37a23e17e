package sessionstore

import (
	"context"
	"errors"
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

// MemoryTombstones bounds how many terminated sessions a Memory remembers.
// Past it, Terminate forgets the tombstone closest to lapsing: that id then
// gets ErrNotFound instead of ErrTerminated, before its time.
const MemoryTombstones = 1 << 14

// Memory is the in-process Store, the default for a single replica. The
// zero value is not usable; call NewMemory.
//
// Memory frees what lapses by itself, without a goroutine: every Create,
// Terminate and Remove drops a few of the records and tombstones that
// lapsed (those first due), Count and Sweep drop all of them, and looking
// an id up drops its own. A tombstone keeps only the id and when it lapses.
type Memory struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*memoryEntry // live records
	tombs    map[string]time.Time    // terminated ids: when each tombstone lapses
	liveDue  dueHeap                 // when live records may lapse (see memoryEntry.due)
	tombDue  dueHeap                 // when tombstones lapse
	// The largest each map has been since it was last remade (shrink).
	sessionsPeak, tombsPeak int

	bcast memoryBroadcast // the broadcast bus (memory_broadcast.go)
}

type memoryEntry struct {
	rec   Record
	ttl   time.Duration
	lease *Lease
	subs  map[*memorySub]struct{}
	// due is the earliest time in liveDue for this id (zero: none). It is
	// never after rec.ExpiresAt, so a sweep finds every lapsed record.
	due time.Time
}

// NewMemory returns an empty in-memory store. now supplies the time for
// expiries; time.Now when nil.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, sessions: make(map[string]*memoryEntry), tombs: make(map[string]time.Time)}
}

func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

func lapsed(now, at time.Time) bool { return !at.IsZero() && !now.Before(at) }

// lookup returns the live entry for id, dropping it if it has lapsed, or
// ErrTerminated for a tombstone that has not. Callers hold m.mu.
func (m *Memory) lookup(id string) (*memoryEntry, error) {
	e, ok := m.sessions[id]
	if !ok {
		if at, ok := m.tombs[id]; ok {
			if !lapsed(m.now(), at) {
				return nil, ErrTerminated
			}
			delete(m.tombs, id)
		}
		return nil, ErrNotFound
	}
	if lapsed(m.now(), e.rec.ExpiresAt) {
		m.drop(id, e)
		return nil, ErrNotFound
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
		return fmt.Errorf("create a session: %w", ErrExists)
	}
	now := m.now()
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	rec.ExpiresAt = expiry(now, ttl)
	rec.ClientInfo = slices.Clone(rec.ClientInfo)
	e := &memoryEntry{rec: rec, ttl: ttl, subs: make(map[*memorySub]struct{})}
	m.sessions[rec.ID] = e
	m.sessionsPeak = max(m.sessionsPeak, len(m.sessions))
	m.scheduleLive(rec.ID, e)
	m.sweepLocked(now, sweepBudget)
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
	m.scheduleLive(id, e)
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
	m.drop(id, e)
	// The tombstone answers ErrTerminated for as long as the session would
	// have lived (TombstoneTTL for a session without expiry), then lapses.
	// It keeps the id and that time, nothing of the record.
	ttl := e.ttl
	if ttl <= 0 {
		ttl = TombstoneTTL
	}
	now := m.now()
	m.addTomb(id, expiry(now, ttl))
	m.sweepLocked(now, sweepBudget)
	return nil
}

// Remove implements Store.
func (m *Memory) Remove(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.sessions[id]; ok {
		m.drop(id, e)
	}
	delete(m.tombs, id)
	m.sweepLocked(m.now(), sweepBudget)
	return nil
}

// Count implements Store. It drops every record and tombstone that lapsed.
func (m *Memory) Count(_ context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(m.now(), -1)
	return len(m.sessions), nil
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
		return errors.New("publish to a session's bus: empty topic")
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
		return fmt.Errorf("publish to a session's bus: %w", ErrNoSubscribers)
	}
	if full != nil {
		return fmt.Errorf("publish to a session's bus: %w", full)
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
		return nil, errors.New("subscribe to a session's bus: empty topic")
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
