package streamable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errStreamClosed is the cause given to a stream closed by the transport.
var errStreamClosed = errors.New("stream closed")

// sseStream is one open SSE response, the standalone GET stream or an
// upgraded POST response. Only the handler goroutine that owns the response
// writes to it; close may be called from any goroutine and interrupts a
// write that is blocked on the network.
//
// A stream ends when it is closed or a write fails (ended, with a cause),
// or when its request's context ends. Its owner learns of the first from
// wake, of the second from ctx.
type sseStream struct {
	w  http.ResponseWriter
	rc http.ResponseController

	// ctx is the request's context, or one derived from it that the
	// stream's end cancels (cancel is then set).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wake, when set, gets a signal (without blocking) when the stream ends.
	wake chan<- struct{}

	mu           sync.Mutex // guards the fields below and the write deadline
	writeTimeout time.Duration
	closed       bool
	cause        error       // why the stream ended, once it has
	writing      bool        // a write is in progress
	opening      bool        // the write in progress is the SSE opening
	since        time.Time   // when the write in progress began
	started      bool        // something was written: the response has begun
	ended        atomic.Bool // closed or a write failed: cause is set
}

// newSSEStream returns a stream whose context, derived from parent, ends
// with it.
func newSSEStream(parent context.Context, w http.ResponseWriter, writeTimeout time.Duration) *sseStream {
	s := &sseStream{}
	s.init(parent, w, writeTimeout, true, nil)
	return s
}

// init prepares s on w. With derive, s.ctx is derived from parent and ends
// with the stream; without, it is parent itself (the stream's end is seen
// on wake only), which costs the request's context no child.
func (s *sseStream) init(parent context.Context, w http.ResponseWriter, writeTimeout time.Duration, derive bool, wake chan<- struct{}) {
	s.w, s.rc, s.writeTimeout, s.wake = w, *http.NewResponseController(w), writeTimeout, wake
	s.ctx = parent
	if derive {
		s.ctx, s.cancel = context.WithCancelCause(parent)
	}
}

// end records that the stream ended with cause (the first cause wins) and
// tells its owner. Callers hold s.mu.
func (s *sseStream) end(cause error) {
	if s.ended.Load() {
		return
	}
	s.cause = cause
	s.ended.Store(true)
	if s.cancel != nil {
		s.cancel(cause)
	}
	s.signal()
}

// start writes the SSE headers and, in the same flush, the events first,
// or when there are none an opening comment, which makes intermediaries
// flush the headers at once. If it fails before anything was written
// (begun is false), the handler can still answer with a status.
func (s *sseStream) start(first ...[]byte) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.mu.Lock()
	s.opening = true
	s.mu.Unlock()
	err := s.write(func() error {
		s.w.WriteHeader(http.StatusOK)
		var body []byte
		if len(first) == 0 {
			body = []byte(": stream open\n\n")
		} else {
			body = appendEvents(nil, first)
		}
		_, err := s.w.Write(body)
		return err
	})
	s.mu.Lock()
	s.opening = false
	s.mu.Unlock()
	return err
}

// event writes one JSON-RPC message as an SSE "message" event.
func (s *sseStream) event(data []byte) error {
	return s.events([][]byte{data})
}

// events writes JSON-RPC messages as SSE "message" events, in order, with
// one write and one flush.
func (s *sseStream) events(msgs [][]byte) error {
	return s.write(func() error {
		_, err := s.w.Write(appendEvents(nil, msgs))
		return err
	})
}

// appendEvents appends msgs to buf as SSE "message" events.
func appendEvents(buf []byte, msgs [][]byte) []byte {
	n := len(buf)
	for _, m := range msgs {
		n += len(m) + 24
	}
	buf = slices.Grow(buf, n-len(buf))
	for _, m := range msgs {
		buf = append(buf, "event: message\ndata: "...)
		buf = append(buf, m...)
		buf = append(buf, "\n\n"...)
	}
	return buf
}

// comment writes an SSE comment line, which clients ignore.
func (s *sseStream) comment(text string) error {
	return s.write(func() error {
		_, err := fmt.Fprintf(s.w, ": %s\n\n", text)
		return err
	})
}

// write runs fn and flushes under a fresh write deadline. A failed write
// ends the stream (end: its owner is told, a derived context cancelled).
func (s *sseStream) write(fn func() error) error {
	s.mu.Lock()
	if s.closed {
		cause := s.cause
		s.mu.Unlock()
		return cause
	}
	s.writing = true
	s.since = time.Now()
	// Errors are ignored: a writer without deadline support still works,
	// only without the bound.
	_ = s.rc.SetWriteDeadline(s.since.Add(s.writeTimeout))
	s.mu.Unlock()

	err := fn()
	if err == nil {
		err = s.rc.Flush()
	}

	if err != nil {
		err = fmt.Errorf("sse write: %w", err)
	}
	s.mu.Lock()
	s.writing = false
	s.started = true
	if !s.closed {
		// Clear the deadline so it cannot fire on an idle stream or on the
		// next request of a kept-alive connection.
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		s.end(err)
	}
	s.mu.Unlock()
	return err
}

// close ends the stream with cause (end: its owner is told, a derived
// context cancelled), and a write blocked on the network is interrupted at
// once. It is idempotent.
func (s *sseStream) close(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.end(cause)
	switch {
	case s.writing && !s.opening:
		// Interrupt the blocked write now. (The opening comment of an SSE
		// stream, a few bytes on a fresh connection, is left to finish under
		// its own deadline, so that the client gets a status line rather
		// than a dropped connection.)
		_ = s.rc.SetWriteDeadline(time.Unix(1, 0))
	case s.started:
		// The handler exits at its next select; bound the final flush
		// net/http does after it.
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	}
}

// dying reports whether the stream can no longer deliver: closed, its
// request gone, or a write failed.
func (s *sseStream) dying() bool {
	return s.ended.Load() || s.ctx.Err() != nil
}

// begun reports whether the response has begun.
func (s *sseStream) begun() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// squeeze cuts the stream's write deadline to d, for the write in progress
// (counted from its start, so a write blocked longer fails at once) and for
// every later one. It is how an overflowing queue closes the stream that
// caused it: a client that still reads completes its writes well within d,
// one that stopped reading loses the stream. It reports whether this call
// squeezed the stream (false if it already was, or is closed).
func (s *sseStream) squeeze(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.writeTimeout <= d {
		return false
	}
	s.writeTimeout = d
	if s.writing {
		_ = s.rc.SetWriteDeadline(s.since.Add(d))
	}
	return true
}

// signal wakes the stream's owner (without blocking; signals coalesce).
func (s *sseStream) signal() {
	if s.wake != nil {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}
