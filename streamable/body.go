package streamable

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"time"
)

// readBody reads the request body, at most MaxBodyBytes of it, within
// BodyReadTimeout: a body declared or found larger is refused (413), one
// that does not arrive in time gets 408, and one that Shutdown interrupted
// gets 503.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *failure) {
	limit := h.cfg.MaxBodyBytes
	if n := r.ContentLength; n > limit {
		return nil, errBodyTooLarge(limit).closing()
	}
	if !h.watch.beginRead(w, r, h.cfg.BodyReadTimeout) {
		return nil, errShuttingDown().closing()
	}
	body, err := h.readLimited(w, r, limit)
	if err == nil && int64(len(body)) > limit {
		err = &http.MaxBytesError{Limit: limit}
	}
	// Shutdown, or the watch at BodyReadTimeout, set the connection's read
	// deadline in the past (where the writer lets it): even a body read
	// whole cannot be served on it any more.
	switch h.watch.endRead(r) {
	case readInterrupted:
		return nil, errShuttingDown().closing()
	case readExpired:
		return nil, errBodyTimeout(h.cfg.BodyReadTimeout).closing()
	}
	if err != nil {
		return nil, h.bodyFailure(err)
	}
	return body, nil
}

// bodyFailure is the answer to a body that was not read whole. It closes
// the connection: net/http would otherwise read what is left of a small
// body (up to 256 KiB) for as long as the client cares to send it.
func (h *Handler) bodyFailure(err error) *failure {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return errBodyTooLarge(h.cfg.MaxBodyBytes).closing()
	case isTimeout(err):
		// Not the watch's (readBody answers that): a deadline of the HTTP
		// server's own, its ReadTimeout.
		return errServerReadTimeout().closing()
	default:
		return errParse("reading the request body: " + err.Error()).closing()
	}
}

// readLimited reads r's body, stopping one byte past limit.
func (h *Handler) readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n >= 0 {
		// Sized from the declared length, the final EOF included, but
		// never more than a small first buffer on the client's word alone:
		// what arrives beyond it grows the buffer as it comes. The limit
		// holds even for a body that is longer than declared (a body a
		// middleware replaced).
		return readFull(io.LimitReader(r.Body, limit+1), make([]byte, 0, min(n+1, firstBodyBuffer)))
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// firstBodyBuffer is the most readBody allocates for a body before any of
// it has arrived.
const firstBodyBuffer = 64 << 10

// readFull reads r to EOF, appending to buf, which grows (doubling) only
// when r holds more than its capacity.
func readFull(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(cap(buf), 512))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// refuseWithID answers f to a POST refused before its body was read (for
// its headers, or because Shutdown began), echoing the id of the message
// in its body when the body arrives at once: it is read for at most
// idPeekTimeout (and MaxBodyBytes), under a read deadline of its own, so
// that a client trickling its body cannot hold the handler; one not read
// whole in that time is answered with a null id, and the connection
// closed. Other methods are refused at once.
func (h *Handler) refuseWithID(w http.ResponseWriter, r *http.Request, f *failure) {
	if r.Method != http.MethodPost || r.ContentLength == 0 || r.ContentLength > h.cfg.MaxBodyBytes {
		h.refuse(w, r, f)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(idPeekTimeout))
	body, err := h.readLimited(w, r, h.cfg.MaxBodyBytes)
	if err != nil || int64(len(body)) > h.cfg.MaxBodyBytes {
		h.refuse(w, r, f.closing())
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	h.writeFailure(w, f.forRequest(itemID(body)))
}

// idPeekTimeout bounds how long refuseWithID waits for a body.
const idPeekTimeout = 100 * time.Millisecond
