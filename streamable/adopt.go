package streamable

import (
	"context"
	"net/http"
)

// adopt returns this replica's copy of a session created on another
// replica, making it from the store's record if there is none yet: the
// session is registered with the local MCPServer with the client info,
// capabilities and protocol version of its initialize. Adoptions are
// serialized per handler (each happens once per session and replica), so
// two requests for one new session get the same copy.
func (h *Handler) adopt(r *http.Request, id string) (*session, *failure) {
	h.adoptMu.Lock()
	defer h.adoptMu.Unlock()
	if s := h.lookup(id); s != nil {
		return s, nil
	}
	rec, err := h.cfg.Store.Get(r.Context(), id)
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
	h.log.Debug("lifeline: adopted a session created on another replica", "session", id)
	return s, nil
}

func (h *Handler) lookup(id string) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[id]
}
