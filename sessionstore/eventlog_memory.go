package sessionstore

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMemoryEventLogBytes is MemoryEventLogOptions.MaxTotalBytes's
// default: sixteen sessions at the default per-session bound.
const DefaultMemoryEventLogBytes = 256 << 20

// What MemoryEventLog counts toward MaxTotalBytes for its own structures,
// on top of the messages: per event, per stream holding events, per
// session holding events. They are measured heap figures, rounded up
// (TestMemoryEventLogOverheads), so that MaxTotalBytes bounds the heap the
// log keeps, however small the messages.
const (
	MemoryEventOverhead   = 128
	MemoryStreamOverhead  = 256
	MemorySessionOverhead = 1024
)

// ErrEventLogFull is returned by MemoryEventLog.StoreEvent when storing the
// message would take the log past MaxTotalBytes: the message is not stored
// (a transport sends it without an id). Room comes back as sessions are
// purged or their events lapse.
var ErrEventLogFull = errors.New("sessionstore: event log full")

// MemoryEventLogOptions configure a MemoryEventLog. The zero value gives
// the defaults.
type MemoryEventLogOptions struct {
	// EventLogOptions bound each stream and session, and set the TTL.
	EventLogOptions
	// MaxTotalBytes bounds what the log keeps for all sessions together
	// (DefaultMemoryEventLogBytes when <= 0): the messages' bytes plus
	// MemoryEventOverhead per event, MemoryStreamOverhead per stream and
	// MemorySessionOverhead per session. A StoreEvent that would take the
	// log past it, before the session's own bounds drop anything, is
	// refused with ErrEventLogFull rather than drop another session's
	// events.
	MaxTotalBytes int
	// Now supplies the time for expiries; time.Now when nil.
	Now func() time.Time
}

// MemoryEventLog is the in-process EventLog, the default for a single
// replica. It is a type of its own, not a part of Memory, because it is on
// the path of every message a stream sends and so has its own lock, and
// because it serves whichever Store keeps the records. The zero value is
// not usable; call NewMemoryEventLog. It is safe for concurrent use.
//
// An event id is "G-N-S" in decimal: G numbers the session's log (a new
// one after a purge or expiry, so old ids stay unknown), N the stream
// within it, S the event within the session. It keeps no goroutine: every
// StoreEvent, ReplayEventsAfter and PurgeSession drops a few of the
// sessions whose events lapsed (those first due), and looking a session up
// drops its own.
type MemoryEventLog struct {
	now func() time.Time
	// base is what memoryLog's times are offsets from (at): the clock's
	// reading at the first StoreEvent (based), not at construction, so
	// that an injected clock set after it (from its zero time, say) is
	// not centuries from it.
	base     time.Time
	based    bool
	opts     EventLogOptions
	maxTotal int

	mu       sync.Mutex
	sessions map[string]*memoryLog
	due      dueHeap // when session logs may lapse (see memoryLog.due)
	gen      uint64  // the last log number given
	total    int     // the cost of all sessions (memoryLog.cost)
	peak     int     // the most sessions since the map was last remade
}

// memoryLog is one session's events.
type memoryLog struct {
	gen     uint64
	streams streamSet
	nextNum uint64 // the last stream number given
	seq     uint64 // the last event number given
	events  int
	bytes   int // message bytes
	cost    int // bytes and overheads: what counts toward MaxTotalBytes
	// order has an entry per event in the order stored, for dropping the
	// session's oldest whatever its stream. An event its stream dropped
	// keeps its entry until it reaches the front or order is compacted.
	order fifo[orderEntry]
	// expires, and due (the earliest time in the log's due heap for this
	// log, when queued) are offsets from the log's base (MemoryEventLog.at),
	// 8 bytes each where a time.Time takes 24: every session with a
	// resumable stream has a memoryLog.
	expires time.Duration
	due     time.Duration
	queued  bool
}

type orderEntry struct {
	s   *memoryStream
	seq uint64
}

type memoryStream struct {
	id     string
	num    uint64
	events fifo[memoryEvent]
	bytes  int
}

type memoryEvent struct {
	seq uint64
	msg json.RawMessage
}

// holds reports whether s still keeps the event seq (a stream drops from
// the front only).
func (s *memoryStream) holds(seq uint64) bool {
	return s.events.len() > 0 && s.events.front().seq <= seq
}

// NewMemoryEventLog returns an empty in-memory event log.
func NewMemoryEventLog(opts MemoryEventLogOptions) *MemoryEventLog {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = DefaultMemoryEventLogBytes
	}
	return &MemoryEventLog{
		now:      opts.Now,
		opts:     opts.EventLogOptions.WithDefaults(),
		maxTotal: opts.MaxTotalBytes,
		sessions: make(map[string]*memoryLog),
	}
}

var _ EventLog = (*MemoryEventLog)(nil)

// StoreEvent implements EventLog. It refuses a message over
// EventLogOptions.MaxEventBytes with ErrEventTooLarge and one that would
// take the log past MaxTotalBytes with ErrEventLogFull.
func (l *MemoryEventLog) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	if sessionID == "" || streamID == "" {
		return "", errors.New("sessionstore: store an event: empty session or stream id")
	}
	size := len(message)
	if maxSize := l.opts.MaxEventBytes(); size > maxSize {
		return "", fmt.Errorf("store an event of %d bytes (at most %d): %w", size, maxSize, ErrEventTooLarge)
	}
	msg := slices.Clip(append(json.RawMessage{}, message...))

	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.based {
		l.base, l.based = now, true
	}
	l.sweepLocked(now, sweepBudget)
	lg := l.lookup(sessionID, now)
	cost := size + MemoryEventOverhead
	if lg == nil {
		cost += MemorySessionOverhead + MemoryStreamOverhead
	} else if lg.streams.id(streamID) == nil {
		cost += MemoryStreamOverhead
	}
	if l.total+cost > l.maxTotal {
		return "", fmt.Errorf("store an event of %d bytes: %w (%d of %d bytes used)", size, ErrEventLogFull, l.total, l.maxTotal)
	}
	if lg == nil {
		l.gen++
		lg = &memoryLog{gen: l.gen}
		l.sessions[sessionID] = lg
		l.peak = max(l.peak, len(l.sessions))
		lg.cost = MemorySessionOverhead
	}
	s := lg.streams.id(streamID)
	if s == nil {
		lg.nextNum++
		s = &memoryStream{id: streamID, num: lg.nextNum}
		lg.streams.add(s)
		lg.cost += MemoryStreamOverhead
	}
	lg.seq++
	s.events.push(memoryEvent{seq: lg.seq, msg: msg})
	lg.order.push(orderEntry{s: s, seq: lg.seq})
	s.bytes += size
	lg.events++
	lg.bytes += size
	lg.cost += size + MemoryEventOverhead
	l.total += cost

	// The new event is never dropped: it fits both byte bounds alone.
	for s.events.len() > l.opts.MaxStreamEvents || s.bytes > l.opts.MaxStreamBytes {
		l.dropOldest(lg, s)
	}
	for lg.events > l.opts.MaxSessionEvents || lg.bytes > l.opts.MaxSessionBytes {
		e := lg.order.pop()
		if e.s.holds(e.seq) {
			l.dropOldest(lg, e.s)
		}
	}
	if lg.order.len() > 2*lg.events+shrinkAbove {
		lg.order.keep(func(e orderEntry) bool { return e.s.holds(e.seq) })
	}
	lg.expires = addSaturating(l.at(now), l.opts.TTL)
	if !lg.queued {
		l.queue(sessionID, lg)
	}
	return formatEventID(lg.gen, s.num, lg.seq), nil
}

// dropOldest drops s's oldest event, and s itself once it is empty.
// Callers hold l.mu.
func (l *MemoryEventLog) dropOldest(lg *memoryLog, s *memoryStream) {
	ev := s.events.pop()
	s.bytes -= len(ev.msg)
	lg.events--
	lg.bytes -= len(ev.msg)
	freed := len(ev.msg) + MemoryEventOverhead
	if s.events.len() == 0 {
		lg.streams.remove(s)
		freed += MemoryStreamOverhead
	}
	lg.cost -= freed
	l.total -= freed
}

// ReplayEventsAfter implements EventLog. It copies the events to send
// under its lock and calls send without it.
func (l *MemoryEventLog) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	gen, num, seq, ok := parseEventID(lastEventID)
	if !ok {
		return "", unknownEvent(lastEventID)
	}
	l.mu.Lock()
	now := l.now()
	l.sweepLocked(now, sweepBudget)
	lg := l.lookup(sessionID, now)
	var s *memoryStream
	if lg != nil && lg.gen == gen {
		s = lg.streams.num(num)
	}
	if s == nil || !s.holds(seq) {
		l.mu.Unlock()
		return "", unknownEvent(lastEventID)
	}
	evs := s.events.items()
	i := sort.Search(len(evs), func(i int) bool { return evs[i].seq >= seq })
	if i == len(evs) || evs[i].seq != seq {
		l.mu.Unlock()
		return "", unknownEvent(lastEventID) // never issued on this stream
	}
	tail := slices.Clone(evs[i+1:])
	streamID := s.id
	l.mu.Unlock()

	for _, ev := range tail {
		if err := send(formatEventID(gen, num, ev.seq), ev.msg); err != nil {
			return "", err
		}
	}
	return streamID, nil
}

// PurgeSession implements EventLog.
func (l *MemoryEventLog) PurgeSession(_ context.Context, sessionID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lg, ok := l.sessions[sessionID]; ok {
		l.dropLog(sessionID, lg)
	}
	l.sweepLocked(l.now(), sweepBudget)
	return nil
}

// Sweep drops the events of every session whose TTL lapsed. The log also
// sweeps a little on its own (see MemoryEventLog); Sweep is for a caller
// that wants it all done now.
func (l *MemoryEventLog) Sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked(l.now(), -1)
}

// lookup returns the session's log, dropping it if it lapsed. Callers hold
// l.mu.
func (l *MemoryEventLog) lookup(sessionID string, now time.Time) *memoryLog {
	lg := l.sessions[sessionID]
	if lg != nil && l.at(now) >= lg.expires {
		l.dropLog(sessionID, lg)
		return nil
	}
	return lg
}

func (l *MemoryEventLog) dropLog(sessionID string, lg *memoryLog) {
	l.total -= lg.cost
	delete(l.sessions, sessionID)
}

// sweepLocked drops the logs that lapsed by now, examining at most budget
// due entries (all when budget < 0), then compacts and shrinks like
// Memory's sweep. Callers hold l.mu.
func (l *MemoryEventLog) sweepLocked(now time.Time, budget int) {
	for budget != 0 && l.due.Len() > 0 && lapsed(now, l.due[0].at) {
		budget--
		d := heap.Pop(&l.due).(due)
		lg, ok := l.sessions[d.id]
		if !ok || !l.queuedAt(lg, d) {
			continue // purged, or a later log of the same session
		}
		lg.queued = false
		if l.at(now) >= lg.expires {
			l.dropLog(d.id, lg)
			continue
		}
		l.queue(d.id, lg) // stored to since: due at its new expiry
	}
	if l.due.Len() > 2*len(l.sessions)+shrinkAbove {
		l.due.keep(func(d due) bool {
			lg, ok := l.sessions[d.id]
			return ok && l.queuedAt(lg, d)
		})
	}
	if len(l.sessions) == 0 && l.peak > shrinkAbove {
		l.sessions, l.peak = make(map[string]*memoryLog), 0 // Go maps never shrink
	}
	l.due.shrink()
}

// at is t as an offset from the log's base: monotonic when both readings
// are (time.Time.Sub), so a wall clock's step moves no expiry.
func (l *MemoryEventLog) at(t time.Time) time.Duration { return t.Sub(l.base) }

// addSaturating is a+b, b > 0, at most the longest Duration: a TTL meant
// as "never" (math.MaxInt64) never wraps around to an expiry in the past.
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// queue puts lg in the due heap at its expiry. Callers hold l.mu.
func (l *MemoryEventLog) queue(sessionID string, lg *memoryLog) {
	lg.due, lg.queued = lg.expires, true
	heap.Push(&l.due, due{at: l.base.Add(lg.due), id: sessionID})
}

// queuedAt reports whether d is lg's entry in the due heap (not one left
// by an earlier log of the same session). Callers hold l.mu.
func (l *MemoryEventLog) queuedAt(lg *memoryLog, d due) bool {
	return lg.queued && l.at(d.at) == lg.due
}

func unknownEvent(id string) error {
	return fmt.Errorf("replay events after %q: %w", id, ErrUnknownEventID)
}

func formatEventID(gen, num, seq uint64) string {
	b := make([]byte, 0, 24)
	b = strconv.AppendUint(b, gen, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, num, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, seq, 10)
	return string(b)
}

// parseEventID reads a MemoryEventLog id; ok is false for anything else.
func parseEventID(id string) (gen, num, seq uint64, ok bool) {
	g, rest, ok1 := strings.Cut(id, "-")
	n, s, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	gen, err1 = strconv.ParseUint(g, 10, 64)
	num, err2 = strconv.ParseUint(n, 10, 64)
	seq, err3 = strconv.ParseUint(s, 10, 64)
	// Only the form formatEventID gives (no sign, no leading zero) is an id.
	ok = err1 == nil && err2 == nil && err3 == nil && formatEventID(gen, num, seq) == id
	return gen, num, seq, ok
}
