package streamable

import (
	"net/http"
	"time"
)

// The request watch also bounds POST bodies as they are read, and lets
// Shutdown interrupt them: a client that trickles a body must hold neither
// a handler for longer than BodyReadTimeout nor the HTTP server's Shutdown,
// but for the bodydrain.Linger its refusal's answer reads what follows.
//
// A read deadline set on the connection for each body, and cleared after
// it, did that before, and cost a JSON tools/call two deadline changes in
// the runtime's poller (about 0.5 µs). Now a body is listed, with when it
// is due, and the watch's goroutine, at its looks, sets the read deadline
// of a body still arriving when due in the past: its read fails at once,
// and the client gets 408 (and its connection closed) within a tick of
// BodyReadTimeout. A body that arrives in time costs a place in a map,
// taken and given back under the watch's mutex.
//
// An HTTP server's ReadTimeout still applies as net/http sets it, from
// the request's start, alongside BodyReadTimeout: the earlier ends the read
// (408 either way). Once a body is read whole, net/http clears the
// connection's read deadline itself, for its read of the idle connection.

// bodyRead is one body being read.
type bodyRead struct {
	w           http.ResponseWriter
	due         time.Time // when the body must have arrived; zero: no bound
	interrupted bool      // Shutdown interrupted it
	expired     bool      // the watch found it due and interrupted it
}

// readEnd is how a body read ended, as far as the watch knows.
type readEnd int

const (
	readDone        readEnd = iota // the read's own result stands
	readInterrupted                // Shutdown interrupted it: 503, even if read whole
	readExpired                    // BodyReadTimeout passed: 408, even if read whole
)

// beginRead lists r's body as being read, due timeout from now (no bound
// when timeout is 0). It reports false once Shutdown has begun.
func (w *requestWatch) beginRead(rw http.ResponseWriter, r *http.Request, timeout time.Duration) bool {
	read := bodyRead{w: rw}
	if timeout > 0 {
		read.due = time.Now().Add(timeout)
	}
	w.mu.Lock()
	if w.readsClosed {
		w.mu.Unlock()
		return false
	}
	if w.reads == nil {
		w.reads = make(map[*http.Request]bodyRead)
	}
	w.reads[r] = read
	if !read.due.IsZero() {
		if w.timedReads == 0 || read.due.Before(w.readsDue) {
			w.readsDue = read.due
		}
		w.timedReads++
		w.startLocked()
	}
	w.mu.Unlock()
	return true
}

// endRead takes r's body off the list and says whether the watch ended
// its read. A read deadline the watch set stays until the refusal's answer
// sets its own bound (refuse, bodydrain.DropUnread).
func (w *requestWatch) endRead(r *http.Request) readEnd {
	w.mu.Lock()
	read := w.reads[r]
	delete(w.reads, r)
	if !read.due.IsZero() {
		w.timedReads--
	}
	w.mu.Unlock()
	switch {
	case read.interrupted:
		return readInterrupted
	case read.expired:
		return readExpired
	}
	return readDone
}

// closeReads interrupts every body being read and refuses new reads.
func (w *requestWatch) closeReads() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readsClosed = true
	for r, read := range w.reads {
		read.interrupted = true
		w.reads[r] = read
		_ = http.NewResponseController(read.w).SetReadDeadline(time.Unix(1, 0))
	}
}

// expireReadsLocked interrupts the bodies due by now. The map is walked
// only when the earliest due time has come: every body is due
// BodyReadTimeout after it began, so one listed later is never due
// earlier. Callers hold w.mu.
func (w *requestWatch) expireReadsLocked(now time.Time) {
	if w.timedReads == 0 || now.Before(w.readsDue) {
		return
	}
	var next time.Time
	for r, read := range w.reads {
		if read.due.IsZero() || read.expired || read.interrupted {
			continue
		}
		if now.Before(read.due) {
			if next.IsZero() || read.due.Before(next) {
				next = read.due
			}
			continue
		}
		if err := http.NewResponseController(read.w).SetReadDeadline(time.Unix(1, 0)); err != nil {
			// A writer without deadline support (a middleware's wrapper
			// that does not unwrap) reads without the bound: the body is
			// served once it has arrived.
			read.due = time.Time{}
			w.timedReads--
		} else {
			read.expired = true
		}
		w.reads[r] = read
	}
	if next.IsZero() {
		// Every timed read left is expired: none is due again.
		next = now.Add(time.Hour)
	}
	w.readsDue = next
}
