package streamable

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// The connection of a let-go response that ended while its request runs on
// the handler goroutine (post_inline.go) goes back to its http.Server once
// the client sends its next request on it: until then it waits here, as an
// idle keep-alive connection waits in net/http, bounded by the server's
// IdleTimeout (else its ReadTimeout), closed by the server's Shutdown
// (RegisterOnShutdown) and by this Handler's, and not counted by the
// server (a connection handed to it at once would be a new one, which
// IdleTimeout does not bound and Shutdown waits seconds for). When the
// first bytes arrive, srv.Serve takes the connection from a listener that
// yields only it, and serves it with its handler, timeouts and hooks. At
// most MaxSessions connections wait at once; past that one is closed.

// handBack waits, on a goroutine of its own that Shutdown joins, for the
// client's next request on conn, then gives conn to srv. early is what
// the client sent already (pipelined): then there is no wait.
func (h *Handler) handBack(srv *http.Server, conn net.Conn, early []byte) {
	h.mu.Lock()
	if h.shutting {
		h.mu.Unlock()
		_ = conn.Close()
		return
	}
	if len(h.waitingConns) >= h.cfg.MaxSessions {
		// Bounded like the sessions: past it, closed (its client's next
		// request may find it closed, as after a server's idle timeout).
		h.mu.Unlock()
		_ = conn.Close()
		return
	}
	if h.waitingConns == nil {
		h.waitingConns = make(map[net.Conn]*http.Server)
		h.onShutdownOf = make(map[*http.Server]bool)
	}
	h.waitingConns[conn] = srv
	if !h.onShutdownOf[srv] {
		h.onShutdownOf[srv] = true
		srv.RegisterOnShutdown(func() { h.closeWaiting(srv) })
	}
	h.handBacks.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.handBacks.Done()
		ready := len(early) > 0
		if !ready {
			if d := idleTimeout(srv); d > 0 {
				_ = conn.SetReadDeadline(time.Now().Add(d))
			}
			ready, early = awaitRequest(conn)
		}
		h.mu.Lock()
		_, mine := h.waitingConns[conn] // else a Shutdown closed it
		delete(h.waitingConns, conn)
		h.mu.Unlock()
		if !ready || !mine {
			_ = conn.Close()
			return
		}
		_ = conn.SetReadDeadline(time.Time{})
		if len(early) > 0 {
			conn = &prefixedConn{Conn: conn, early: early}
		}
		l := &oneConnListener{conn: conn}
		_ = srv.Serve(l) // returns at the second Accept
		if l.taken.CompareAndSwap(false, true) {
			_ = conn.Close() // srv is shutting down
		}
	}()
}

// closeWaiting closes the connections waiting for a request to go back to
// srv (all of them when srv is nil): srv, or this Handler, shuts down.
func (h *Handler) closeWaiting(srv *http.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, s := range h.waitingConns {
		if srv == nil || s == srv {
			delete(h.waitingConns, c)
			_ = c.Close()
		}
	}
}

// idleTimeout is how long net/http's srv keeps an idle keep-alive
// connection: IdleTimeout, else ReadTimeout; none when that is not
// positive.
func idleTimeout(srv *http.Server) time.Duration {
	if srv.IdleTimeout != 0 {
		return srv.IdleTimeout
	}
	return srv.ReadTimeout
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

// prefixedConn is a connection whose first reads return early, bytes read
// from it before it was handed on.
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

// CloseWrite half-closes the connection, as net/http does to a TCP
// connection before its close when it can.
func (c *prefixedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// readFirstByte reads one byte of conn: whether it came, and it.
func readFirstByte(conn net.Conn) (bool, []byte) {
	var b [1]byte
	n, err := conn.Read(b[:])
	return n == 1 && err == nil, b[:n]
}
