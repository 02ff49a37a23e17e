package streamable

import (
	"context"
	"net/http"
)

// serveDelete terminates a session: its GET stream is closed (a blocked
// write interrupted) and its handler waited for, its requests cancelled and
// pending server requests failed, and it is unregistered before the 200.
func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request) {
	if f := checkProtocolVersion(r); f != nil {
		writeFailure(w, f)
		return
	}
	sess, f := h.session(r, false)
	if f != nil {
		writeFailure(w, f)
		return
	}
	if !sess.terminate(context.WithoutCancel(h.requestContext(r.Context(), r)), errDeleted) {
		// Another DELETE, expiry or Shutdown got there first.
		writeFailure(w, h.goneAnswer())
		return
	}
	w.WriteHeader(http.StatusOK)
}
