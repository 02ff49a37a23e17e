package lifelineclient

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"
)

// resumableBody is an SSE response body that hands its reader whole events
// only, and, when the stream breaks off after an event id (or, for a GET
// stream, ends after one), reopens it with Last-Event-ID and reads on. What
// the reader gets is then every event once, in order, as if the stream had
// never broken. Read is called from one goroutine; Close from any.
type resumableBody struct {
	rt   *roundTripper
	req  *http.Request
	get  bool // a GET stream: resumed when the server ends it too
	scan eventScanner
	out  []byte // the part of an event not yet read
	err  error  // the error every later Read returns
	// tries counts the resume attempts since an event with content (not
	// only comments and retry, as a stream's opening) was last read, so
	// that a server that takes each resume and breaks it again before
	// sending anything still runs out of attempts.
	tries int

	mu     sync.Mutex
	body   io.ReadCloser // the connection being read
	closed bool
}

// Read implements io.Reader.
func (b *resumableBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		event, err := b.scan.next()
		if err == nil {
			b.out = event
			if b.scan.delivered {
				b.tries = 0
			}
			break
		}
		b.err = b.broken(err)
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// broken decides what a read error means: it returns the error for the
// reader, or nil once the stream is resumed (b.out then holds what is
// left of an event cut short when the stream is not resumed).
func (b *resumableBody) broken(err error) error {
	ended := errors.Is(err, io.EOF)
	if errors.Is(err, errEventTooLong) || b.req.Context().Err() != nil || b.isClosed() {
		return err
	}
	if b.scan.lastID == "" || b.rt.policy.Attempts < 0 || (ended && !b.get) {
		if ended && b.scan.lastID == "" {
			// mcp-go's reader dispatches an event the end of the body
			// cut short: hand it what arrived, as the body would have.
			// After an event id it is not handed on: mcp-go resumes a
			// call's stream that ended from that id (SEP-1699), and the
			// server sends the event again, whole.
			b.out = b.scan.partial()
		}
		b.scan.pending = nil
		return err
	}
	if rerr := b.resume(err); rerr != nil {
		return rerr
	}
	return nil
}

// resume reopens the stream from the last event id, waiting as the server
// asked, doubling the wait after each failed attempt, at most
// ResumePolicy.Attempts times.
func (b *resumableBody) resume(cause error) error {
	p := b.rt.policy
	ctx := b.req.Context()
	for b.tries < p.Attempts {
		b.tries++
		n := b.tries
		d := p.delay(n, b.scan.retry, b.scan.hasRetry)
		b.rt.logger.Debug("lifelineclient: resuming a stream", "method", b.req.Method, "attempt", n, "delay", d, "cause", cause)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		g := resumeRequest(b.req, b.scan.lastID)
		if b.rt.auth != nil {
			if v, err := b.rt.auth(ctx); err == nil {
				g.Header.Set("Authorization", v)
			}
		}
		resp, err := b.rt.base.RoundTrip(g)
		if err != nil {
			cause = err
			continue
		}
		b.rt.watch(g, resp.StatusCode)
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode == http.StatusOK && mt == "text/event-stream" {
			if !b.swap(resp.Body) {
				return fmt.Errorf("resume the stream: %w", io.ErrClosedPipe)
			}
			return nil
		}
		resp.Body.Close()
		if !retryableStatus(resp.StatusCode) {
			return fmt.Errorf("%w: GET with Last-Event-ID answered %d (broke with: %v)", errStreamGone, resp.StatusCode, cause)
		}
		cause = fmt.Errorf("GET with Last-Event-ID answered %d", resp.StatusCode)
	}
	return fmt.Errorf("resume the stream: %d attempts without an event, the last failed with: %w", p.Attempts, cause)
}

// retryableStatus reports whether a resume answered status may be tried
// again: a server error, 429, or 409 (lifeline's answer while the stream
// it replaces still looks live to it: a cut it has not noticed yet).
func retryableStatus(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusConflict
}

// swap reads on from body, closing the connection it replaces; it reports
// false, and closes body, if b was closed meanwhile.
func (b *resumableBody) swap(body io.ReadCloser) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		body.Close()
		return false
	}
	b.body.Close()
	b.body = body
	b.scan.reset(body)
	return true
}

func (b *resumableBody) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close closes the connection being read; a Read in progress returns.
func (b *resumableBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.body.Close()
}
