package streamable

import (
	"context"
	"fmt"
	"net/http"
)

// adoption is one replica's making of its copy of a session, which the
// other requests for that session wait for.
type adoption struct {
	done chan struct{} // closed when s or f is set
	s    *session
	f    *failure
	// foreign: the request making it was refused (another caller's
	// session), so no copy was made; those waiting try anew.
	foreign bool
}

// maxAdoptRounds bounds how many adoptions a request waits for that were
// refused to their callers, before it gives up (503).
const maxAdoptRounds = 3

// adopt returns this replica's copy of a session created on another
// replica, making it from the store's record if there is none yet: the
// session is registered with the local MCPServer with the client info,
// capabilities and protocol version of its initialize. Concurrent requests
// for one session share one adoption (and wait for it, at most as long as
// their own context); adoptions of different sessions run in parallel.
func (h *Handler) adopt(r *http.Request, id string) (*session, *failure) {
	for range maxAdoptRounds {
		if s, f, again := h.adoptOnce(r, id); !again {
			return s, f
		}
	}
	return nil, errStore(fmt.Errorf("adopting session %s: %d adoptions in a row were refused to other callers", logID(id), maxAdoptRounds))
}

// adoptOnce is one round of adopt: again when the adoption it waited for
// was refused to the caller that made it.
func (h *Handler) adoptOnce(r *http.Request, id string) (s *session, f *failure, again bool) {
	h.mu.Lock()
	if s := h.sessions[id]; s != nil {
		h.mu.Unlock()
		if s.stateless { // an ephemeral session: no client's to name (lookup)
			return nil, errSessionNotFound(), false
		}
		return s, nil, false
	}
	if a := h.adopting[id]; a != nil {
		h.mu.Unlock()
		select {
		case <-a.done:
			return a.s, a.f, a.foreign
		case <-r.Context().Done():
			return nil, errStore(context.Cause(r.Context())), false
		}
	}
	a := &adoption{done: make(chan struct{})}
	h.adopting[id] = a
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.adopting, id)
		h.mu.Unlock()
		close(a.done)
	}()
	a.s, a.f, a.foreign = h.makeCopy(r, id)
	return a.s, a.f, false
}

// makeCopy reads the session's record and makes, registers and inserts
// its local copy, unless the record is bound to another caller than r's:
// then it answers r's refusal (foreign) and makes nothing, so that a
// stranger's request changes nothing here either.
func (h *Handler) makeCopy(r *http.Request, id string) (s *session, f *failure, foreign bool) {
	// Not the request's own context: other requests wait for this
	// adoption, and must not fail because this one's client left. The
	// store bounds the call.
	rec, err := h.store.Get(context.WithoutCancel(r.Context()), id)
	switch {
	case isGone(err):
		return nil, errSessionNotFound(), false
	case err != nil:
		return nil, errStore(err), false
	}
	if f := h.checkBound(r, id, rec.Caller); f != nil {
		return nil, f, true
	}
	s = newSession(h, id)
	s.restoreRecord(rec)
	s.life.Lock()
	defer s.life.Unlock()
	ctx := h.requestContext(r.Context(), r)
	if err := h.mcp.RegisterSession(ctx, s); err != nil {
		return nil, errInternal("registering an adopted session: " + err.Error()), false
	}
	if f := h.addSession(s); f != nil {
		h.mcp.UnregisterSession(context.WithoutCancel(ctx), id)
		return nil, f, false
	}
	h.log.Debug("lifeline: adopted a session created on another replica", "session", logID(id))
	return s, nil, false
}

// lookup returns the session named by a client's id: nil for an id that
// names none here, or names an ephemeral session (a 2026-07-28 or
// stateless request's, whose id no client is given).
func (h *Handler) lookup(id string) *session {
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s != nil && s.stateless {
		return nil
	}
	return s
}
