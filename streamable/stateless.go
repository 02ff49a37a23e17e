package streamable

import (
	"errors"
	"net/http"
)

// errRequestDone ends the ephemeral session of a stateless or 2026-07-28
// request. Ended sessions keep its address (endEphemeral: endContextWith)
// and read it as their cause, so it is never assigned.
var errRequestDone = errors.New("stateless request done")

// errStatelessCall refuses server-to-client requests in stateless mode.
var errStatelessCall = errors.New("lifeline: stateless mode has no session to carry the client's answer to a server request")

// errModernCall refuses server-to-client requests on 2026-07-28.
var errModernCall = errors.New("lifeline: protocol version 2026-07-28 has no server-to-client requests; return an input-required result (mcp.NewInputRequestBuilder) instead")

// serveStateless serves one POST in stateless mode: the message runs on an
// ephemeral session of its own that ends with the request, so nothing one
// client's request sends can reach another client. No session id is
// issued or required, GET and DELETE get 405, and server-to-client requests
// (sampling, elicitation, roots) fail, having no way back.
func (h *Handler) serveStateless(w http.ResponseWriter, r *http.Request, env envelope, body []byte) {
	if env.Method == "" {
		// No server request was ever sent, so no answer can be expected.
		h.writeFailure(w, errUnknownResponseID(env.ID))
		return
	}
	sess := newEphemeralSession(h, "stateless-", false)
	sess.Initialize()
	if f := h.addSession(sess); f != nil {
		h.writeFailure(w, f.forRequest(env.ID))
		return
	}
	defer sess.endEphemeral()
	if len(env.ID) == 0 {
		h.acceptNotification(w, r, sess, body)
		return
	}
	h.serveRequest(w, r, sess, env, body)
}
