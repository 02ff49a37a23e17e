package streamable

// callerFull answers 429 if s counts toward a caller that holds its
// maximum of sessions here already (MaxSessionsPerCaller), and counts the
// refusal.
func (h *Handler) callerFull(s *session) *failure {
	if !s.counted {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.callerFullLocked(s)
}

// callerFullLocked is callerFull with h.mu held.
func (h *Handler) callerFullLocked(s *session) *failure {
	if limit := h.cfg.MaxSessionsPerCaller; limit > 0 && h.callers[s.caller] >= limit {
		h.callerLimited.Add(1)
		return errTooManyCallerSessions(limit, DefaultRetryAfter)
	}
	return nil
}
