package streamable

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// A resumable request served by net/http's HTTP/1 server runs on its
// handler goroutine, as a request without an event log does: no worker
// goroutine, whose start and stack growth cost a JSON tools/call about as
// much as the rest of the transport. Letting go of its response while it
// runs (CloseSSEStream, a drain, a client that stopped reading) cannot wait
// for the handler to return, so the writer takes the connection over
// (Hijack) and ends the response itself: a stream that was whole gets the
// chunked body's last chunk, so the client reads a complete response, and
// the connection is handed back to the same http.Server (Serve on a
// listener that yields only it), which serves the client's next request
// on it as it would have; a broken stream's connection is closed. Either
// way the client resumes with Last-Event-ID while the request goes on here.
// Elsewhere (HTTP/2, Handle's writers, a middleware's writer without
// Hijack, a server other than net/http's) the request runs on a worker
// (runResumable).

// inlineServer returns the http.Server whose handler goroutine a
// resumable request can run on: net/http's own HTTP/1 server, whose
// response writer (w itself, not one it wraps: a middleware's writer may
// transform the body) can hand its connection over. nil otherwise.
func inlineServer(w http.ResponseWriter, r *http.Request) *http.Server {
	if r.ProtoMajor != 1 {
		return nil
	}
	if _, ok := w.(http.Hijacker); !ok {
		return nil
	}
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	return srv
}

// runResumableInline runs a resumable request on this handler goroutine:
// runResumable without the worker. It returns when the request has
// returned; a response let go of before that was ended by its writer.
func (h *Handler) runResumableInline(w http.ResponseWriter, r *http.Request, srv *http.Server, sess *session, env envelope, body []byte) {
	p, ok := h.beginResumable(w, r, sess, env, srv)
	if !ok {
		return
	}
	// A client that asked to close, or speaks HTTP/1.0, is not handed its
	// connection back.
	p.keepConn = r.ProtoAtLeast(1, 1) && !r.Close
	stop := p.watchClient(r)
	p.run(body, &env)
	p.returned()
	p.cancel(nil)
	p.sess.endWork(p)
	p.unwatchClient(stop)
}

// takeConnection, on the writer goroutine, takes the connection of an
// inline request's response over, so that the response can end while the
// request runs on (nil, true for a request on a worker, whose handler's
// return ends it). It reports false when the connection cannot be had;
// it is not asked again.
func (p *postStream) takeConnection() (net.Conn, bool) {
	if p.srv == nil {
		return nil, true
	}
	if p.noHangUp {
		return nil, false
	}
	rc := http.NewResponseController(p.w)
	// Hijack flushes what net/http holds: bounded like any write.
	_ = rc.SetWriteDeadline(time.Now().Add(p.h.cfg.WriteTimeout))
	conn, rw, err := rc.Hijack()
	if err != nil {
		p.noHangUp = true
		p.h.log.Debug("lifeline: a let-go response's connection cannot be taken over: the response stays until its request returns",
			"session", logID(p.sess.id), "err", err)
		return nil, false
	}
	if n := rw.Reader.Buffered(); n > 0 {
		// The client sent more (pipelined): it is read before the
		// connection's own bytes.
		early, _ := rw.Reader.Peek(n)
		conn = &prefixedConn{Conn: conn, early: append([]byte(nil), early...)}
	}
	return conn, true
}

// hangUp ends a response whose connection takeConnection took (none:
// nothing to do). A whole stream (clean) on a chunked body gets its last
// chunk, within the write timeout, and its connection goes back to the
// server for the client's next request, unless the client asked to close;
// otherwise the connection is closed, which the client sees as a cut.
func (p *postStream) hangUp(conn net.Conn, clean bool) {
	if conn == nil {
		return
	}
	if !clean || !p.keepConn {
		_ = conn.Close()
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(p.h.cfg.WriteTimeout))
	if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
		_ = conn.Close()
		return
	}
	_ = conn.SetWriteDeadline(time.Time{}) // the server sets its own, if any
	p.h.handBack(p.srv, conn)
}

// handBack gives conn back to srv, which serves it as a connection it
// accepted (its handler, timeouts and hooks). The goroutine that calls
// Serve returns as soon as srv took conn (or refused it, shutting down:
// conn is closed); Shutdown joins it.
func (h *Handler) handBack(srv *http.Server, conn net.Conn) {
	h.mu.Lock()
	if h.shutting {
		h.mu.Unlock()
		_ = conn.Close()
		return
	}
	h.handBacks.Add(1)
	h.mu.Unlock()
	l := &oneConnListener{conn: conn}
	go func() {
		defer h.handBacks.Done()
		_ = srv.Serve(l) // returns at the second Accept
		if l.taken.CompareAndSwap(false, true) {
			_ = conn.Close() // srv is shutting down
		}
	}()
}

// oneConnListener is a net.Listener that yields one connection, then
// reports itself closed.
type oneConnListener struct {
	conn  net.Conn
	taken atomic.Bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if l.taken.CompareAndSwap(false, true) {
		return l.conn, nil
	}
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// prefixedConn is a connection whose first reads return early, bytes that
// were read from it before it was taken over.
type prefixedConn struct {
	net.Conn
	early []byte
}

func (c *prefixedConn) Read(b []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(b, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}
