package streamable

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// SetOpenLinger sets how long h's resumable responses on a log in another
// process hold their first notifications back (post_linger.go), before h
// serves anything.
func SetOpenLinger(h *Handler, d time.Duration) { h.openLinger = d }

// AsNetHTTPWriter returns w as a stand-in for net/http's own HTTP/1
// response writer, whose resumable requests run on the handler goroutine
// (post_inline.go): for the handler benchmarks, which serve no connection.
// Its Hijack fails (no benchmark lets go of a response).
func AsNetHTTPWriter(w http.ResponseWriter) http.ResponseWriter { return netHTTPStandIn{w} }

type netHTTPStandIn struct{ http.ResponseWriter }

func (netHTTPStandIn) standsInForNetHTTP() {}

func (w netHTTPStandIn) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (netHTTPStandIn) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}

// WatchListed reports how many requests h's requestWatch lists (those in
// their first moments, not yet handed a timer and callback of their own).
func WatchListed(h *Handler) int {
	h.watch.mu.Lock()
	defer h.watch.mu.Unlock()
	n := 0
	for p := h.watch.head; p != nil; p = p.watch.next {
		n++
	}
	return n
}
