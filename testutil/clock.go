package testutil

import (
	"sync"
	"time"

	"github.com/lifeline-mcp/lifeline/heartbeat"
)

// ManualClock is a heartbeat.Clock whose time moves only when Advance is
// called: timers fire exactly then, so heartbeats and expiry can be tested
// without waiting. It is safe for concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

// NewManualClock returns a clock stopped at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock has advanced by d.
func (c *ManualClock) NewTimer(d time.Duration) heartbeat.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, ch: make(chan time.Time, 1)}
	t.armLocked(d)
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d and fires every timer due by then.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.armed && !t.at.After(c.now) {
			t.armed = false
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

// Timers reports how many timers are armed: a test can wait until the code
// under test has set the timer it is about to advance past.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.armed {
			n++
		}
	}
	return n
}

type manualTimer struct {
	c     *ManualClock
	ch    chan time.Time
	at    time.Time
	armed bool
}

func (t *manualTimer) armLocked(d time.Duration) {
	t.at = t.c.now.Add(d)
	t.armed = true
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armed = false
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.armed
	t.armLocked(d)
	return was
}
