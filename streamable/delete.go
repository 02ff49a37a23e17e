package streamable

import (
	"context"
	"net/http"
)

// serveDelete terminates a session: its GET stream is closed (a blocked
// write interrupted) and its handler waited for, its requests cancelled and
// pending server requests failed, and it is unregistered before the 200.
func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request) {
	if f := h.checkProtocolVersion(r); f != nil {
		h.writeFailure(w, f)
		return
	}
	sess, f := h.session(r, false)
	if f != nil {
		h.writeFailure(w, f)
		return
	}
	ctx := context.WithoutCancel(h.requestContext(r.Context(), r))
	if h.shared {
		// The store first: if it cannot terminate the session, nothing
		// changes anywhere and the client is told so; once it has, the
		// session is over on every replica, whoever ends the local copy.
		if err := h.store.Terminate(r.Context(), sess.id); err != nil {
			if isGone(err) {
				sess.terminate(ctx, errEndedElsewhere)
				h.writeFailure(w, errSessionNotFound())
				return
			}
			h.writeFailure(w, errStore(err))
			return
		}
		if !sess.terminate(ctx, errDeletedInStore) && sess.endedWith() == errDeletedInStore {
			// Another DELETE on this replica got there first.
			h.writeFailure(w, errSessionNotFound())
			return
		}
		// The session's events go with it, as they do alone (its local
		// copy, ended as deleted in the store, leaves the log to this).
		// A holder on another replica that records once more before it
		// hears of the end leaves an event the log's TTL lapses.
		if log := h.cfg.EventLog; log != nil {
			if err := log.PurgeSession(ctx, sess.id); err != nil {
				h.log.Warn("lifeline: purge the session's events", "session", logID(sess.id), "err", err)
			}
		}
		h.met.answered(causeDeleted)
		w.WriteHeader(http.StatusOK)
		return
	}
	if !sess.terminate(ctx, errDeleted) {
		// Another DELETE, expiry or Shutdown got there first.
		h.writeFailure(w, h.goneAnswer())
		return
	}
	h.met.answered(causeDeleted)
	w.WriteHeader(http.StatusOK)
}
