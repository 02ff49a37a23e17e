package streamable_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// writerGuard wraps a handler and records every use of a ResponseWriter
// after the ServeHTTP it was given to returned (net/http forbids it: the
// writer's buffers go back to a pool and its connection to the next
// request). Such a use is recorded, not passed on.
type writerGuard struct {
	mu   sync.Mutex
	late []string
}

func (g *writerGuard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw := &guardedWriter{g: g, w: w, rc: http.NewResponseController(w), what: r.Method}
		defer gw.returned.Store(true)
		h.ServeHTTP(gw, r)
	})
}

// uses returns the late uses recorded so far.
func (g *writerGuard) uses() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.late...)
}

type guardedWriter struct {
	g        *writerGuard
	w        http.ResponseWriter
	rc       *http.ResponseController
	what     string
	returned atomic.Bool
}

// late reports, recording it, whether the handler has returned.
func (gw *guardedWriter) late(call string) bool {
	if !gw.returned.Load() {
		return false
	}
	gw.g.mu.Lock()
	gw.g.late = append(gw.g.late, fmt.Sprintf("%s after the %s handler returned", call, gw.what))
	gw.g.mu.Unlock()
	return true
}

func (gw *guardedWriter) Header() http.Header {
	if gw.late("Header") {
		return http.Header{}
	}
	return gw.w.Header()
}

func (gw *guardedWriter) Write(b []byte) (int, error) {
	if gw.late("Write") {
		return 0, http.ErrHandlerTimeout
	}
	return gw.w.Write(b)
}

func (gw *guardedWriter) WriteHeader(code int) {
	if gw.late(fmt.Sprintf("WriteHeader(%d)", code)) {
		return
	}
	gw.w.WriteHeader(code)
}

func (gw *guardedWriter) Flush() { _ = gw.FlushError() }

func (gw *guardedWriter) FlushError() error {
	if gw.late("Flush") {
		return http.ErrHandlerTimeout
	}
	return gw.rc.Flush()
}

func (gw *guardedWriter) SetWriteDeadline(t time.Time) error {
	if gw.late("SetWriteDeadline") {
		return nil
	}
	return gw.rc.SetWriteDeadline(t)
}

func (gw *guardedWriter) SetReadDeadline(t time.Time) error {
	if gw.late("SetReadDeadline") {
		return nil
	}
	return gw.rc.SetReadDeadline(t)
}
