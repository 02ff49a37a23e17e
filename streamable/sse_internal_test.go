package streamable

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// linkWriter is an http.ResponseWriter on a simulated link that takes rate
// bytes per second (0: none at all, a stalled client), honouring write
// deadlines as a connection does: a write that cannot finish by its
// deadline, even one moved while it waits, fails with
// os.ErrDeadlineExceeded. It runs in a testing/synctest bubble.
type linkWriter struct {
	rate    int
	header  http.Header
	changed chan struct{} // 1-slot: the deadline moved

	mu       sync.Mutex
	deadline time.Time
	written  int
}

func newLinkWriter(rate int) *linkWriter {
	return &linkWriter{rate: rate, header: http.Header{}, changed: make(chan struct{}, 1)}
}

func (w *linkWriter) Header() http.Header { return w.header }
func (w *linkWriter) WriteHeader(int)     {}
func (w *linkWriter) FlushError() error   { return nil }

func (w *linkWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return nil
}

func (w *linkWriter) Write(p []byte) (int, error) {
	var finish time.Time // zero: never, on a stalled link
	if w.rate > 0 {
		finish = time.Now().Add(time.Duration(len(p)) * time.Second / time.Duration(w.rate))
	}
	for {
		w.mu.Lock()
		dl := w.deadline
		w.mu.Unlock()
		now := time.Now()
		if !dl.IsZero() && !dl.After(now) {
			return 0, os.ErrDeadlineExceeded
		}
		if !finish.IsZero() && !finish.After(now) {
			w.mu.Lock()
			w.written += len(p)
			w.mu.Unlock()
			return len(p), nil
		}
		until := finish
		if until.IsZero() || (!dl.IsZero() && dl.Before(until)) {
			until = dl
		}
		var fire <-chan time.Time
		var t *time.Timer
		if !until.IsZero() {
			t = time.NewTimer(until.Sub(now))
			fire = t.C
		}
		select {
		case <-fire:
		case <-w.changed:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// framed is the size of msg written as one SSE event.
func framed(msg []byte) int { return len("event: message\ndata: ") + len(msg) + len("\n\n") }

// TestChunkedWriteOnASlowSteadyLink: a message that takes far longer than
// the write timeout on a slow link goes out whole, since each chunk makes
// progress within it.
func TestChunkedWriteOnASlowSteadyLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLinkWriter(64 << 10) // a chunk per half second
		s := newSSEStream(context.Background(), w, time.Second)
		msg := []byte(strings.Repeat("x", 4<<20)) // 64 s on this link
		start := time.Now()
		if err := s.event(msg); err != nil {
			t.Fatalf("after %v: %v", time.Since(start), err)
		}
		if w.written != framed(msg) {
			t.Fatalf("%d bytes written, want %d", w.written, framed(msg))
		}
	})
}

// TestChunkedWriteOnAStalledLinkFailsAfterWriteTimeout: a client that
// takes nothing still loses the stream one write timeout after its last
// progress.
func TestChunkedWriteOnAStalledLinkFailsAfterWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSSEStream(context.Background(), newLinkWriter(0), time.Second)
		start := time.Now()
		err := s.event([]byte(strings.Repeat("x", 1<<20)))
		if !errors.Is(err, errWriteFailed) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a stalled link: %v", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("failed after %v, want the write timeout (1s)", took)
		}
		if !s.dying() {
			t.Fatal("the stream lives on after a failed write")
		}
	})
}

// TestChunkedWriteOfATrickleIsBoundedByTheMinimumRate: a client that takes
// each chunk within the write timeout but trickles below minWriteRate
// loses the stream writeTimeout + size/minWriteRate after the write began.
func TestChunkedWriteOfATrickleIsBoundedByTheMinimumRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Second
		w := newLinkWriter(10 << 10) // a chunk in 3.2 s, within the timeout
		s := newSSEStream(context.Background(), w, timeout)
		msg := []byte(strings.Repeat("x", 1<<20)) // 102 s at 10 KiB/s
		start := time.Now()
		err := s.event(msg)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a trickle below the minimum rate: %v", err)
		}
		limit := timeout + time.Duration(framed(msg))*time.Second/minWriteRate
		if took := time.Since(start); took > limit {
			t.Fatalf("failed after %v, past the bound %v", took, limit)
		}
		if w.written <= writeChunk || w.written >= framed(msg) {
			t.Fatalf("%d of %d bytes written: want the chunks to pass their own deadlines and the floor to cut the write",
				w.written, framed(msg))
		}
	})
}

// TestSqueezeCutsAChunkedWriteFromItsChunksStart: squeezed in the middle
// of a large write, a chunk that has run longer than the new deadline
// (counted from the chunk's start) fails at once.
func TestSqueezeCutsAChunkedWriteFromItsChunksStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSSEStream(context.Background(), newLinkWriter(64<<10), 10*time.Second)
		done := make(chan error)
		go func() { done <- s.event([]byte(strings.Repeat("x", 1<<20))) }() // 16 s
		time.Sleep(2*time.Second + 200*time.Millisecond)                    // a chunk began 200 ms ago
		if !s.squeeze(100 * time.Millisecond) {
			t.Fatal("squeeze did nothing")
		}
		err := <-done
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("squeezed write: %v", err)
		}
	})
}

// TestCloseStopsAChunkedWrite: close interrupts a large write in progress
// and later writes return the cause without trying.
func TestCloseStopsAChunkedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSSEStream(context.Background(), newLinkWriter(64<<10), 10*time.Second)
		done := make(chan error)
		go func() { done <- s.event([]byte(strings.Repeat("x", 1<<20))) }()
		time.Sleep(2 * time.Second)
		s.close(errDeleted)
		if err := <-done; !errors.Is(err, errWriteFailed) {
			t.Fatalf("closed write: %v", err)
		}
		if err := s.event([]byte("{}")); err != errDeleted {
			t.Fatalf("write after close: %v, want the cause unwrapped", err)
		}
	})
}

// TestCloseBoundsABlockedOpening: a stream closed while its opening is
// blocked on the network fails after openingGrace, not its write timeout.
func TestCloseBoundsABlockedOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSSEStream(context.Background(), newLinkWriter(0), time.Minute)
		done := make(chan error)
		go func() { done <- s.start() }()
		synctest.Wait() // the opening is blocked
		s.close(errDeleted)
		start := time.Now()
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("blocked opening: %v", err)
		}
		if took := time.Since(start); took != openingGrace {
			t.Fatalf("the opening failed %v after close, want openingGrace (%v)", took, openingGrace)
		}
	})
}

// TestCloseLetsAnOpeningFinishWithinItsGrace: a stream closed while its
// opening (here an upgraded POST's first event) is going out still writes
// the opening whole when it takes less than openingGrace, so the client
// gets a whole first message, not a torn one.
func TestCloseLetsAnOpeningFinishWithinItsGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLinkWriter(10 << 10) // the 21-byte event prefix takes 2 ms, the message 10 ms
		s := newSSEStream(context.Background(), w, time.Minute)
		msg := []byte(strings.Repeat("x", 100))
		done := make(chan error)
		go func() { done <- s.start(msg) }()
		time.Sleep(time.Millisecond) // within the prefix's write
		s.close(errDeleted)
		if err := <-done; err != nil {
			t.Fatalf("opening closed within its grace: %v", err)
		}
		if w.written != framed(msg) {
			t.Fatalf("%d bytes of the opening written, want %d", w.written, framed(msg))
		}
	})
}
