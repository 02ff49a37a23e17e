package streamable

import (
	"context"
	"net/http"
)

// adoption is one replica's making of its copy of a session, which the
// other requests for that session wait for.
type adoption struct {
	done chan struct{} // closed when s or f is set
	s    *session
	f    *failure
}

// adopt returns this replica's copy of a session created on another
// replica, making it from the store's record if there is none yet: the
// session is registered with the local MCPServer with the client info,
// capabilities and protocol version of its initialize. Concurrent requests
// for one session share one adoption (and wait for it, at most as long as
// their own context); adoptions of different sessions run in parallel.
func (h *Handler) adopt(r *http.Request, id string) (*session, *failure) {
	h.mu.Lock()
	if s := h.sessions[id]; s != nil {
		h.mu.Unlock()
		return s, nil
	}
	if a := h.adopting[id]; a != nil {
		h.mu.Unlock()
		select {
		case <-a.done:
			return a.s, a.f
		case <-r.Context().Done():
			return nil, errStore(context.Cause(r.Context()))
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
	a.s, a.f = h.makeCopy(r, id)
	return a.s, a.f
}

// makeCopy reads the session's record and makes, registers and inserts
// its local copy.
func (h *Handler) makeCopy(r *http.Request, id string) (*session, *failure) {
	// Not the request's own context: other requests wait for this
	// adoption, and must not fail because this one's client left. The
	// store bounds the call.
	rec, err := h.store.Get(context.WithoutCancel(r.Context()), id)
	switch {
	case isGone(err):
		return nil, errSessionNotFound()
	case err != nil:
		return nil, errStore(err)
	}
	s := newSession(h, id)
	s.restoreRecord(rec)
	s.life.Lock()
	defer s.life.Unlock()
	ctx := h.requestContext(r.Context(), r)
	if err := h.mcp.RegisterSession(ctx, s); err != nil {
		return nil, errInternal("registering an adopted session: " + err.Error())
	}
	if f := h.addSession(s); f != nil {
		h.mcp.UnregisterSession(context.WithoutCancel(ctx), id)
		return nil, f
	}
	h.log.Debug("lifeline: adopted a session created on another replica", "session", logID(id))
	return s, nil
}

func (h *Handler) lookup(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}
