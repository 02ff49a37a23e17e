package heartbeat

import "sync"

// Tracker decides whether the peer on one stream is alive from the pings
// sent on it and the pongs received for them.
//
// A peer that has never answered a ping is never judged dead: some clients
// read pings but do not answer them, and cutting them off would break them.
// A peer that has answered at least once is dead when Limit consecutive pings
// have gone unanswered.
type Tracker struct {
	limit int

	mu         sync.Mutex
	answered   bool
	unanswered int
	pong       chan struct{}
}

// NewTracker returns a tracker that judges a peer dead after limit
// consecutive unanswered pings (DefaultMissedPongLimit when limit < 1).
func NewTracker(limit int) *Tracker {
	if limit < 1 {
		limit = DefaultMissedPongLimit
	}
	return &Tracker{limit: limit}
}

// Sent records that a ping went out on the stream.
func (t *Tracker) Sent() {
	t.mu.Lock()
	t.unanswered++
	t.mu.Unlock()
}

// Pong records that the peer answered one of this stream's pings. Every
// channel handed out by PongSignal before this call is closed.
func (t *Tracker) Pong() {
	t.mu.Lock()
	t.answered = true
	t.unanswered = 0
	if t.pong != nil {
		close(t.pong)
		t.pong = nil
	}
	t.mu.Unlock()
}

// Forgive forgets the pings that went unanswered so far, without counting
// an answer: for a stream whose pongs could not reach it for a while (they
// travel through a store that was down), so that it is judged on the pings
// sent from now on.
func (t *Tracker) Forgive() {
	t.mu.Lock()
	t.unanswered = 0
	t.mu.Unlock()
}

// PongSignal returns a channel that is closed by the next Pong.
func (t *Tracker) PongSignal() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pong == nil {
		// Made on demand: most streams are never probed.
		t.pong = make(chan struct{})
	}
	return t.pong
}

// Answered reports whether the peer has ever answered a ping.
func (t *Tracker) Answered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered
}

// Dead reports whether a peer that has answered before has since left the
// limit of consecutive pings unanswered.
func (t *Tracker) Dead() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered && t.unanswered >= t.limit
}

// Unanswered reports how many pings have gone out since the last pong.
func (t *Tracker) Unanswered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unanswered
}
