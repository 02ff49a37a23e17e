package streamable

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Handle serves one request given in mcp-go's transport-agnostic form
// (server.HTTPRequest and server.HTTPResponseWriter), for HTTP frameworks
// other than net/http: the request becomes an *http.Request (its body the
// buffered bytes, its context r.Context) and is served exactly as
// ServeHTTP serves it. It differs from mcp-go's Handle where lifeline's
// ServeHTTP does, and in these:
//
//   - Origin validation and CORS apply, as on ServeHTTP (mcp-go applies
//     neither); DNS-rebinding protection applies only when r.Context
//     carries the connection's local address under http.LocalAddrContextKey
//     (net/http puts it there; an adapter may), since Handle has no
//     connection to read it from.
//   - When w.CanStream() is false, GET gets 405, as in mcp-go. A POST
//     stays one application/json answer unless its request sends messages
//     (progress, logging) before its answer: then the answer is an SSE
//     body, those messages first, which w delivers whole at the end
//     (mcp-go drops them). No keep-alive is sent on such a response.
//     Server-to-client requests made during such a call wait for an answer
//     the client cannot see before the call ends: avoid them.
//   - Write deadlines reach the framework through w's SetWriteDeadline
//     (interface{ SetWriteDeadline(time.Time) error }) when it has one:
//     then a client that stops reading loses its stream within the write
//     timeout, and DELETE, expiry and Shutdown interrupt a blocked write,
//     as on ServeHTTP. Without it, a write blocked in the framework cannot
//     be interrupted: DELETE, expiry and Shutdown still end the session
//     and return within their bounds, but the goroutine that called
//     Handle stays in that write until the framework's own timeout or the
//     connection's end.
func (h *Handler) Handle(w server.HTTPResponseWriter, r *server.HTTPRequest) {
	hw := &handleWriter{w: w, canStream: w.CanStream()}
	hw.deadline, _ = w.(interface{ SetWriteDeadline(time.Time) error })
	if r == nil {
		writeFailure(hw, errNilRequest())
		return
	}
	ctx := r.Context
	if ctx == nil {
		ctx = context.Background()
	}
	u := r.URL
	if u == nil {
		u = &url.URL{Path: "/"}
	}
	hdr := r.Header
	if hdr == nil {
		hdr = make(http.Header)
	}
	host := u.Host
	if host == "" {
		host = hdr.Get("Host")
	}
	req := (&http.Request{
		Method: r.Method, URL: u, Header: hdr, Host: host, RequestURI: u.RequestURI(),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(r.Body)), ContentLength: int64(len(r.Body)),
	}).WithContext(ctx)
	if req.Method == http.MethodGet && !hw.canStream {
		h.refuse(hw, req, errCannotStream())
		return
	}
	h.ServeHTTP(hw, req)
}

// handleWriter is the http.ResponseWriter Handle serves through: it
// implements what lifeline reaches through http.ResponseController,
// flushing and, when the framework's writer has it, the write deadline.
// Read deadlines are not supported (the body is already buffered): the
// controller reports http.ErrNotSupported, which lifeline ignores.
type handleWriter struct {
	w         server.HTTPResponseWriter
	deadline  interface{ SetWriteDeadline(time.Time) error } // nil without
	canStream bool
}

func (w *handleWriter) Header() http.Header         { return w.w.Header() }
func (w *handleWriter) Write(p []byte) (int, error) { return w.w.Write(p) }
func (w *handleWriter) WriteHeader(status int)      { w.w.WriteHeader(status) }

// FlushError flushes the framework's writer (a no-op when it cannot
// stream).
func (w *handleWriter) FlushError() error {
	w.w.Flush()
	return nil
}

// SetWriteDeadline sets the framework writer's write deadline, or reports
// http.ErrNotSupported when it has none.
func (w *handleWriter) SetWriteDeadline(t time.Time) error {
	if w.deadline == nil {
		return http.ErrNotSupported
	}
	return w.deadline.SetWriteDeadline(t)
}

// streams reports whether w delivers what it writes as it writes it: not
// a Handle writer whose framework cannot stream.
func streams(w http.ResponseWriter) bool {
	hw, ok := w.(*handleWriter)
	return !ok || hw.canStream
}
