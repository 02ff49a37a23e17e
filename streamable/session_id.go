package streamable

import "net/http"

// newSessionID generates the id of the session initialize request r
// creates: Config.NewSessionIDFor's, when set, else Config.NewSessionID's.
func (h *Handler) newSessionID(r *http.Request) string {
	if h.cfg.NewSessionIDFor != nil {
		return h.cfg.NewSessionIDFor(r)
	}
	return h.cfg.NewSessionID()
}
