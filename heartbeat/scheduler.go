package heartbeat

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler signals registered entries when their interval elapses. It runs
// exactly one goroutine, started by NewScheduler and joined by Close, however
// many entries are registered.
type Scheduler struct {
	clock Clock

	mu      sync.Mutex
	entries entryHeap
	closed  bool

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewScheduler starts a scheduler on clock (SystemClock when nil). Call Close
// to stop it; Close waits for its goroutine to exit.
func NewScheduler(clock Clock) *Scheduler {
	if clock == nil {
		clock = SystemClock{}
	}
	s := &Scheduler{
		clock: clock,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go s.run()
	return s
}

// Entry is one registration with a Scheduler. Its Due channel receives a
// value each time its interval elapses; signals that are not consumed before
// the next one coalesce, so a slow consumer never blocks the scheduler.
type Entry struct {
	s        *Scheduler
	interval time.Duration
	next     time.Time
	index    int // position in the heap; -1 once removed
	due      chan struct{}
	fired    atomic.Bool // fired since the last Fired
}

// Add registers an entry that first fires interval from now and then every
// interval. interval must be positive. After Close, the returned entry never
// fires.
func (s *Scheduler) Add(interval time.Duration) *Entry {
	return s.AddSignal(interval, make(chan struct{}, 1))
}

// AddSignal is Add with a channel the caller owns, which it may share with
// signals of its own (one goroutine then waits on one channel for all of
// them): the entry sends on due without blocking, so due should have a
// buffer of one, and Fired tells the entry's signals from the others.
func (s *Scheduler) AddSignal(interval time.Duration, due chan struct{}) *Entry {
	if interval <= 0 {
		panic("heartbeat: Scheduler.Add or AddSignal with a non-positive interval")
	}
	e := &Entry{s: s, interval: interval, index: -1, due: due}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return e
	}
	e.next = s.clock.Now().Add(interval)
	heap.Push(&s.entries, e)
	first := e.index == 0
	s.mu.Unlock()
	if first {
		s.poke()
	}
	return e
}

// Due delivers a value each time the entry's interval elapses.
func (e *Entry) Due() <-chan struct{} { return e.due }

// Trigger makes the entry due now, as if its interval had elapsed (it
// coalesces with a signal not yet consumed), without moving its schedule.
// It is safe to call from any goroutine, after Remove too.
func (e *Entry) Trigger() {
	e.fire()
}

// Fired reports whether the entry fired (or was triggered) since the last
// call, and resets it.
func (e *Entry) Fired() bool {
	return e.fired.Swap(false)
}

func (e *Entry) fire() {
	e.fired.Store(true)
	select {
	case e.due <- struct{}{}:
	default:
	}
}

// Remove unregisters the entry. It is safe to call more than once.
func (e *Entry) Remove() {
	s := e.s
	s.mu.Lock()
	if e.index >= 0 {
		heap.Remove(&s.entries, e.index)
	}
	s.mu.Unlock()
}

// Len reports how many entries are registered.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Close stops the scheduler and waits for its goroutine to exit. Entries
// stay registered but never fire again. Close is idempotent.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) run() {
	defer close(s.done)
	const idle = time.Hour
	timer := s.clock.NewTimer(idle)
	defer timer.Stop()
	for {
		wait := s.fireDue()
		timer.Stop()
		timer.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C():
		}
	}
}

// fireDue signals every entry whose time has come and returns how long to
// wait for the next one.
func (s *Scheduler) fireDue() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for len(s.entries) > 0 {
		e := s.entries[0]
		if e.next.After(now) {
			return e.next.Sub(now)
		}
		e.fire()
		e.next = e.next.Add(e.interval)
		if !e.next.After(now) {
			e.next = now.Add(e.interval)
		}
		heap.Fix(&s.entries, 0)
	}
	return time.Hour
}

type entryHeap []*Entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*Entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
