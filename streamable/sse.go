package streamable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	// met, when set, counts the stream's opening and the writes that hit
	// their deadline (metrics.go).
	met *meters
	// finishedByNetHTTP: net/http (not a Handle framework) ends the
	// response once its handler returns, and clears the write deadline
	// then (writeLast, openLast).
	finishedByNetHTTP bool

	mu           sync.Mutex // guards the fields below and the write deadline
	writeTimeout time.Duration
	closed       bool
	cause        error       // why the stream ended, once it has
	writing      bool        // a write is in progress
	opening      bool        // the write in progress is the SSE opening (its first chunk)
	started      bool        // something was written: the response has begun
	ended        atomic.Bool // closed or a write failed: cause is set
	since        time.Time   // when the chunk in progress began (write, progress)
	// budget is what the write in progress has left, from since, of its
	// whole bound (minWriteRate): no deadline of it runs past since+budget.
	budget time.Duration

	// Owned by the writing goroutine, during a write.
	pending int32 // bytes of the write not yet counted in budget
	chunked int32 // bytes written under the current deadline
}

// A write goes out in chunks of at most writeChunk bytes, each under a
// deadline of its own (writeTimeout from the moment the one before it was
// taken by the network): a client that reads slowly but steadily makes
// progress within every deadline and keeps its stream however large the
// message, while one that stops reading fails within writeTimeout of its
// last progress, as before.
const writeChunk = 32 << 10

// minWriteRate bounds a whole write, however its chunks progress: no
// deadline of a write runs past writeTimeout + (the bytes handed to the
// network so far, the chunk in progress included)/minWriteRate from its
// start. A client that takes less than minWriteRate on average, beyond a
// writeTimeout of slack, loses its stream, and a write of n bytes ends
// within writeTimeout + n/minWriteRate at the latest (with a 10 s
// writeTimeout, 5 min 15 s for 5 MB), so that a client that trickles
// cannot hold its stream's handler on one message for longer. 16 KiB/s
// is 128 kbit/s.
const minWriteRate = 16 << 10

// openingGrace is how long a stream closed during its opening write (the
// status line and first bytes of the response) leaves that write to
// finish: a moment, so that the client normally gets a status line rather
// than a dropped connection, but a bounded one, well within CleanupTimeout,
// so that an opening blocked on the network does not outlast the
// termination that waits for its handler.
const openingGrace = 100 * time.Millisecond

// errWriteFailed wraps the error of a write that was tried: some of it may
// have reached the client. A write refused because the stream had already
// ended returns the stream's cause unwrapped.
var errWriteFailed = errors.New("sse write")

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
	_, viaHandle := w.(*handleWriter)
	s.finishedByNetHTTP = !viaHandle
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
	if len(first) == 0 {
		return s.startWith(": stream open\n\n")
	}
	return s.open(func() error { return s.putEvents(first) })
}

// startWith is start with opening, whole SSE lines (at most writeChunk
// bytes), as what is written first.
func (s *sseStream) startWith(opening string) error {
	return s.open(func() error { return s.putString(opening) })
}

// open writes the SSE headers and, in the same flush, what fn puts.
func (s *sseStream) open(fn func() error) error { return s.openOut(fn, true) }

// openLast is open for a response whose opening write, of size bytes (fn's,
// the headers aside), is also its last, as writeLast is write: when it fits
// net/http's response buffer it is left there, and net/http sends the
// headers, the events and the body's end in one write once the handler
// returns (with a Content-Length: the whole body is known).
func (s *sseStream) openLast(size int, fn func() error) error {
	return s.openOut(fn, size > lastInBuffer || !s.finishedByNetHTTP)
}

// openOut is open, flushing when flush is set (openLast).
func (s *sseStream) openOut(fn func() error, flush bool) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.mu.Lock()
	s.opening = true
	s.mu.Unlock()
	err := s.writeOut(func() error {
		s.w.WriteHeader(http.StatusOK)
		return fn()
	}, flush)
	s.mu.Lock()
	s.opening = false
	s.mu.Unlock()
	if s.met != nil && s.begun() {
		s.met.answered(causeStream)
	}
	return err
}

// event writes one JSON-RPC message as an SSE "message" event.
func (s *sseStream) event(data []byte) error {
	return s.events([][]byte{data})
}

// events writes JSON-RPC messages as SSE "message" events, in order, with
// one write and one flush.
func (s *sseStream) events(msgs [][]byte) error {
	return s.write(func() error { return s.putEvents(msgs) })
}

// putEvents puts msgs as SSE "message" events, within a write.
func (s *sseStream) putEvents(msgs [][]byte) error {
	for _, m := range msgs {
		if err := s.putString("event: message\ndata: "); err != nil {
			return err
		}
		if err := s.put(m); err != nil {
			return err
		}
		if err := s.putString("\n\n"); err != nil {
			return err
		}
	}
	return nil
}

// eventWithID writes one JSON-RPC message as an SSE "message" event whose
// id is id (no id line when id is empty).
func (s *sseStream) eventWithID(id string, data []byte) error {
	return s.write(func() error {
		if id != "" {
			if err := s.putString("id: "); err != nil {
				return err
			}
			if err := s.putString(id); err != nil {
				return err
			}
			if err := s.putString("\n"); err != nil {
				return err
			}
		}
		return s.putEvents([][]byte{data})
	})
}

// comment writes an SSE comment line, which clients ignore.
func (s *sseStream) comment(text string) error {
	return s.write(func() error {
		_, err := fmt.Fprintf(s.w, ": %s\n\n", text)
		return err
	})
}

// write runs fn, which writes one message (with put, putString or
// directly when it is small), and flushes, under write deadlines: the
// first set here, the next ones by put as the message goes out in chunks.
// A failed write ends the stream (end: its owner is told, a derived
// context cancelled) and returns an error wrapping errWriteFailed.
func (s *sseStream) write(fn func() error) error {
	return s.writeOut(fn, true)
}

// writeOut is write, flushing when flush is set; unflushed (writeLast,
// openLast),
// the deadline set here stays, for net/http's own send of what fn wrote.
func (s *sseStream) writeOut(fn func() error, flush bool) error {
	s.mu.Lock()
	if s.closed {
		cause := s.cause
		s.mu.Unlock()
		return cause
	}
	s.writing = true
	s.since = time.Now()
	s.budget = s.writeTimeout
	s.pending, s.chunked = 0, 0
	s.arm()
	s.mu.Unlock()

	err := fn()
	if err == nil && flush {
		err = s.rc.Flush()
	}

	if err != nil {
		err = fmt.Errorf("%w: %w", errWriteFailed, err)
	}
	s.mu.Lock()
	s.writing = false
	s.started = true
	if !s.closed && flush {
		// Clear the deadline so it cannot fire on an idle stream or on the
		// next request of a kept-alive connection.
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if !s.closed && isWriteDeadline(err) {
			traceWriteDeadline(s.ctx, err)
		}
		if s.met != nil && !s.closed {
			// Not interrupted by close (which also uses a deadline).
			s.met.deadlineExceeded(err)
		}
		s.end(err)
	}
	s.mu.Unlock()
	return err
}

// lastInBuffer is the most a response's last write leaves unflushed
// (writeLast, openLast): what net/http's response buffer holds before it chunks.
const lastInBuffer = 2048

// writeLast is write for the response's last write, of size bytes (fn's),
// after which the handler returns: when it fits net/http's response buffer
// it is left there, unflushed, and net/http sends it with the body's end
// (the last chunk) in one write once the handler returns, instead of two.
// The deadline set here bounds that send (net/http clears it after); a
// larger one, and any on a Handle writer (whose framework neither sends
// it for us nor clears the deadline), is written as write writes it.
func (s *sseStream) writeLast(size int, fn func() error) error {
	if size > lastInBuffer || !s.finishedByNetHTTP {
		return s.write(fn)
	}
	return s.writeOut(fn, false)
}

// eventsSize is how many bytes putEventsWithIDs writes for ids and msgs
// (ids nil: putEvents).
func eventsSize(ids []string, msgs [][]byte) int {
	n := 0
	for i, m := range msgs {
		n += len("event: message\ndata: ") + len(m) + len("\n\n")
		if i < len(ids) && ids[i] != "" {
			n += len("id: ") + len(ids[i]) + len("\n")
		}
	}
	return n
}

// arm sets the deadline of the chunk that began at s.since. (Errors are
// ignored: a writer without deadline support still works, only without
// the bound.) Callers hold s.mu.
func (s *sseStream) arm() {
	_ = s.rc.SetWriteDeadline(s.due())
}

// due is the deadline of the chunk in progress: writeTimeout from its
// start, within the write's budget. Callers hold s.mu.
func (s *sseStream) due() time.Time {
	return s.since.Add(min(s.writeTimeout, s.budget))
}

// put writes p within a write (in write's fn), in chunks of at most
// writeChunk bytes, each under a fresh deadline (progress).
func (s *sseStream) put(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), writeChunk)
		if err := s.progress(n); err != nil {
			return err
		}
		if _, err := s.w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// putString writes str, at most writeChunk bytes, within a write.
func (s *sseStream) putString(str string) error {
	if err := s.progress(len(str)); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, str)
	return err
}

// progress accounts for the next n bytes (at most writeChunk) of the write
// in progress. What was written before them has been taken by the network
// (the writes returned), which is the client's progress: once the bytes
// under the current deadline would pass writeChunk, the next chunk begins
// now, under a fresh deadline, no longer the opening, and the bytes since
// the last such moment, these n included, add n/minWriteRate to the
// write's budget. It fails, with the stream's cause, once the stream is
// closed: close interrupts a write between its pieces too, except within
// the opening's first chunk, which close leaves its grace. Within a chunk
// it takes no lock.
func (s *sseStream) progress(n int) error {
	s.pending += int32(n)
	within := int(s.chunked)+n <= writeChunk
	if within && !s.ended.Load() {
		s.chunked += int32(n)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed && !(s.opening && within) {
		return s.cause
	}
	if within {
		s.chunked += int32(n)
		return nil
	}
	now := time.Now()
	s.budget += time.Duration(s.pending)*time.Second/minWriteRate - now.Sub(s.since)
	s.pending = 0
	s.since = now
	s.opening = false
	s.chunked = int32(n)
	s.arm()
	return nil
}

// close ends the stream with cause (end: its owner is told, a derived
// context cancelled), and a write blocked on the network is interrupted at
// once. It is idempotent.
func (s *sseStream) close(cause error) { s.closeFirst(cause) }

// closeFirst is close, reporting whether this call closed the stream (false
// when it was closed already), so that what closing means is counted once.
func (s *sseStream) closeFirst(cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.closed = true
	s.end(cause)
	switch {
	case s.writing && s.opening:
		// The opening of an SSE stream, a few bytes on a fresh connection,
		// is left a moment to finish, so that the client gets a status line
		// rather than a dropped connection; one blocked on the network
		// fails after openingGrace.
		if dl := time.Now().Add(openingGrace); dl.Before(s.due()) {
			_ = s.rc.SetWriteDeadline(dl)
		}
	case s.writing:
		// Interrupt the blocked write now (a write between two chunks
		// stops at the next: progress).
		_ = s.rc.SetWriteDeadline(time.Unix(1, 0))
	case s.started:
		// The handler exits at its next select; bound the final flush
		// net/http does after it.
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	}
	return true
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

// squeeze cuts the stream's write deadline to d, for the chunk in progress
// (counted from its start, so a chunk blocked longer fails at once) and for
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
		s.arm()
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

// putEventsWithIDs puts msgs as SSE "message" events, each with its id
// (none where the id is empty), within a write.
func (s *sseStream) putEventsWithIDs(ids []string, msgs [][]byte) error {
	for i := range msgs {
		if ids[i] != "" {
			if err := s.putString("id: " + ids[i] + "\n"); err != nil {
				return err
			}
		}
		if err := s.putEvents(msgs[i : i+1]); err != nil {
			return err
		}
	}
	return nil
}
