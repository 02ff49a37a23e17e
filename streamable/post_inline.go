package streamable

import (
	"io"
	"net"
	"net/http"
	"reflect"
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
// then the connection is given back to the same http.Server
// (post_handback.go), which serves the client's next request on it; a
// broken stream's connection, or one whose client asked to close, is
// closed. Either way the client resumes with Last-Event-ID while the
// request goes on here. Elsewhere (HTTP/2, Handle's writers, a
// middleware's writer, TLS, a server other than net/http's) the request
// runs on a worker (runResumable).

// inlineServer returns the http.Server whose handler goroutine a
// resumable request can run on: net/http's own HTTP/1 server, over plain
// TCP (a TLS connection could not be given back with bytes the server had
// read of it already), when w is its own response writer (not a
// middleware's, which may transform the body or be unable to hand the
// connection over). nil otherwise.
func (h *Handler) inlineServer(w http.ResponseWriter, r *http.Request) *http.Server {
	if r.ProtoMajor != 1 || r.TLS != nil || !h.isNetHTTPWriter(w) {
		return nil
	}
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	return srv
}

// isNetHTTPWriter reports whether w is net/http's HTTP/1 response writer
// (an unexported type: known by its name, then by the type the handler
// found it to be), or a test's stand-in for it (export_test.go).
func (h *Handler) isNetHTTPWriter(w http.ResponseWriter) bool {
	t := reflect.TypeOf(w)
	if known, _ := h.netHTTPWriter.Load().(reflect.Type); known == t && t != nil {
		return true
	}
	if _, ok := w.(interface{ standsInForNetHTTP() }); ok {
		return true
	}
	if t.Kind() == reflect.Pointer && t.Elem().Name() == "response" && t.Elem().PkgPath() == "net/http" {
		h.netHTTPWriter.Store(t)
		return true
	}
	return false
}

// runResumableInline runs a resumable request on this handler goroutine:
// runResumable without the worker. It returns when the request has
// returned; a response let go of before that was ended by its writer.
func (h *Handler) runResumableInline(w http.ResponseWriter, r *http.Request, srv *http.Server, sess *session, env *envelope, body []byte) {
	p, ok := h.beginResumable(w, r, sess, env, srv)
	if !ok {
		return
	}
	p.watchClientInline(r)
	p.run(body, env)
	p.returned()
	p.cancel(nil)
	p.endWork()
	p.h.watch.remove(p)
	p.clientWatch.Wait() // a clientGone that runs already touches the response
}

// watchClientInline has run's requestWatch watch for r's client leaving,
// as watchClient does with a callback of its own (request_watch.go): for a
// request whose context is not r's, on its handler goroutine, which then
// removes it from the watch and waits on clientWatch once run returns.
func (p *postStream) watchClientInline(r *http.Request) {
	p.watch.client, p.watch.clientOwned = r.Context(), true
}

// takeConnection, on the writer goroutine, takes the connection of an
// inline request's response over, so that the response can end while the
// request runs on (nil, true for a request on a worker, whose handler's
// return ends it). It returns what the client sent after the request, if
// anything was read already. It reports false when the connection cannot
// be had; it is not asked again.
func (p *postStream) takeConnection() (net.Conn, []byte, bool) {
	if p.srv == nil {
		return nil, nil, true
	}
	if p.noHangUp {
		return nil, nil, false
	}
	rc := http.NewResponseController(p.w)
	// Hijack flushes what net/http holds: bounded like any write.
	_ = rc.SetWriteDeadline(time.Now().Add(p.h.cfg.WriteTimeout))
	conn, rw, err := rc.Hijack()
	if err != nil {
		p.noHangUp = true
		p.h.log.Debug("lifeline: a let-go response's connection cannot be taken over: the response stays until its request returns",
			"session", logID(p.sess.id), "err", err)
		return nil, nil, false
	}
	var early []byte
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n) // the client pipelined
		early = append([]byte(nil), b...)
	}
	return conn, early, true
}

// hangUp ends a response whose connection takeConnection took (none:
// nothing to do). A whole stream (clean) of a chunked (HTTP/1.1) body gets
// its last chunk, within the write timeout; then its connection goes back
// to the server for the client's next request, unless the client asked to
// close (or speaks HTTP/1.0, whose body the close ends). A broken one's is
// closed, which the client sees as a cut.
func (p *postStream) hangUp(conn net.Conn, early []byte, clean bool) {
	if conn == nil {
		return
	}
	if !clean {
		_ = conn.Close()
		return
	}
	if p.chunked {
		_ = conn.SetWriteDeadline(time.Now().Add(p.h.cfg.WriteTimeout))
		if _, err := io.WriteString(conn, "0\r\n\r\n"); err != nil {
			_ = conn.Close()
			return
		}
		_ = conn.SetWriteDeadline(time.Time{}) // the server sets its own, if any
	}
	if !p.keepConn {
		_ = conn.Close()
		return
	}
	p.h.handBack(p.srv, conn, early)
}
