package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// modernVersion is the protocol version without sessions: no initialize,
// no standalone GET, subscriptions/listen streams on POST.
const modernVersion = mcp.ProtocolVersion20260728

// methodListen opens a 2026-07-28 listen stream, the long-lived stream of
// that version.
const methodListen = "subscriptions/listen"

// declaresModern reports whether a request declares the 2026-07-28
// protocol, by header or in its message's params._meta. Later versions are
// not served (400), so only that exact version counts.
func declaresModern(r *http.Request, params json.RawMessage) bool {
	if r.Header.Get(headerProtocolVersion) == modernVersion {
		return true
	}
	if !bytes.Contains(params, []byte(modernVersion)) {
		return false // the cheap check spares most requests a decode
	}
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	return json.Unmarshal(params, &p) == nil && p.Meta.ProtocolVersion() == modernVersion
}

// newModernHandler returns mcp-go's own transport for the sessionless
// protocol. The edge checks have run by the time it is reached, so its own
// localhost check is off.
func newModernHandler(s *mcpserver.MCPServer, h *Handler) *mcpserver.StreamableHTTPServer {
	return mcpserver.NewStreamableHTTPServer(s,
		mcpserver.WithDisableLocalhostProtection(true),
		mcpserver.WithStreamableHTTPLogger(h.log),
	)
}

// serveModern hands a 2026-07-28 POST to mcp-go's handler, with lifeline's
// write deadlines on every write and, once the answer is an SSE stream
// (subscriptions/listen), ": keepalive" comments every heartbeat interval.
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	dw := &deadlineWriter{w: w, rc: http.NewResponseController(w), timeout: h.cfg.WriteTimeout, h: h, cancel: cancel}
	// A listen stream is ended as soon as Shutdown begins, like a GET
	// stream; other requests are left to finish within its grace.
	env, _ := parseEnvelope(body)
	dw.listen = env.Method == methodListen
	if !h.modernReqs.add(dw) {
		writeFailure(w, errShuttingDown().forRequest(env.ID))
		return
	}
	defer h.modernReqs.remove(dw)
	defer dw.stopKeepalive()
	// mcp-go's handler derives the context of the message from the
	// request's: headers and ContextFunc reach tools as on other versions.
	r = r.WithContext(h.requestContext(ctx, r))
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.modern.ServeHTTP(dw, r)
}

// modernSet tracks the 2026-07-28 requests in flight, so that Shutdown can
// end them (long-lived listen streams included) and wait for them.
type modernSet struct {
	mu     sync.Mutex
	closed bool
	reqs   map[*deadlineWriter]struct{}
	empty  chan struct{} // closed when closed and no request is left
}

func (m *modernSet) add(dw *deadlineWriter) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	if m.reqs == nil {
		m.reqs = make(map[*deadlineWriter]struct{})
	}
	m.reqs[dw] = struct{}{}
	return true
}

func (m *modernSet) remove(dw *deadlineWriter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reqs, dw)
	if m.closed && len(m.reqs) == 0 && m.empty != nil {
		close(m.empty)
		m.empty = nil
	}
}

// close refuses new requests, ends the listen streams (cancelled, blocked
// writes interrupted), leaves the other requests running, and returns a
// channel closed when none is left.
func (m *modernSet) close() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	done := make(chan struct{})
	if len(m.reqs) == 0 {
		close(done)
		return done
	}
	m.empty = done
	for dw := range m.reqs {
		if dw.listen {
			dw.interrupt()
		}
	}
	return done
}

// cancelRunning cancels the requests still running (Shutdown's grace is
// over); what they answer is still written.
func (m *modernSet) cancelRunning() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for dw := range m.reqs {
		dw.cancel()
	}
}

// interruptAll ends every request left (Shutdown's context ended).
func (m *modernSet) interruptAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for dw := range m.reqs {
		dw.interrupt()
	}
}

// deadlineWriter serializes the writes of mcp-go's handler and of the
// keep-alive, each under the write timeout.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	h       *Handler

	cancel      context.CancelFunc // ends the request
	listen      bool               // a subscriptions/listen stream
	interrupted atomic.Bool

	mu     sync.Mutex
	failed bool
	stop   chan struct{} // set when the keep-alive goroutine runs
	done   chan struct{}
}

// interrupt ends the request: its context is cancelled and a write blocked
// on the network fails at once, as do later ones. It does not take mu,
// which a blocked write holds.
func (d *deadlineWriter) interrupt() {
	d.interrupted.Store(true)
	d.cancel()
	_ = d.rc.SetWriteDeadline(time.Unix(1, 0))
}

func (d *deadlineWriter) Header() http.Header { return d.w.Header() }

func (d *deadlineWriter) WriteHeader(code int) {
	d.mu.Lock()
	d.w.WriteHeader(code)
	mt, _, _ := mime.ParseMediaType(d.w.Header().Get("Content-Type"))
	startKeepalive := mt == "text/event-stream" && d.h.pings() && d.stop == nil
	if startKeepalive {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
	}
	d.mu.Unlock()
	if startKeepalive {
		go d.keepalive()
	}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeLocked(p)
}

func (d *deadlineWriter) writeLocked(p []byte) (int, error) {
	if d.interrupted.Load() {
		d.failed = true
		return 0, errShutdown
	}
	d.armDeadline()
	n, err := d.w.Write(p)
	_ = d.rc.SetWriteDeadline(time.Time{})
	if err != nil {
		d.failed = true
	}
	return n, err
}

// Flush implements http.Flusher.
func (d *deadlineWriter) Flush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
}

func (d *deadlineWriter) flushLocked() {
	if d.interrupted.Load() {
		d.failed = true
		return
	}
	d.armDeadline()
	if d.rc.Flush() != nil {
		d.failed = true
	}
	_ = d.rc.SetWriteDeadline(time.Time{})
}

// keepalive writes a comment every heartbeat interval until stopped or a
// write fails.
func (d *deadlineWriter) keepalive() {
	defer close(d.done)
	e := d.h.sched.Add(d.h.cfg.HeartbeatInterval)
	defer e.Remove()
	for {
		select {
		case <-d.stop:
			return
		case <-e.Due():
		}
		d.mu.Lock()
		if !d.failed {
			if _, err := d.writeLocked([]byte(": keepalive\n\n")); err == nil {
				d.flushLocked()
			}
		}
		failed := d.failed
		d.mu.Unlock()
		if failed {
			return
		}
	}
}

// stopKeepalive stops and joins the keep-alive goroutine, if it runs.
func (d *deadlineWriter) stopKeepalive() {
	d.mu.Lock()
	stop, done := d.stop, d.done
	d.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// armDeadline sets the write deadline for the next write; an interrupt
// that raced the setting wins.
func (d *deadlineWriter) armDeadline() {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	if d.interrupted.Load() {
		_ = d.rc.SetWriteDeadline(time.Unix(1, 0))
	}
}
