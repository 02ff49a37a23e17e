package streamable

import (
	"context"
	"crypto/rand"
)

// newEphemeralSession makes the session one request runs on, in stateless
// mode or of protocol 2026-07-28 (modern): its id, prefix and 26 random
// characters, is never issued to a client. It has no qMade (bareSession):
// that channel only wakes a pump at once when the session's queues are
// made after the pump started, and a pump of an ephemeral session (with
// replicas, should anything start one) learns it at its next idle tick
// instead, or ends with the session's one request.
func newEphemeralSession(h *Handler, prefix string, modern bool) *session {
	s := bareSession(h, prefix+rand.Text())
	s.stateless, s.modern = true, modern
	return s
}

// endEphemeral ends an ephemeral session as its one request returns. A
// session that nothing else holds (no request running, no response writer
// tracked, no stream, pump or watch: the common case) ends at once, as
// terminate would end it, without its waits: its state goes from active
// to terminated under s.mu, where whatever would start to hold it (addWork,
// ensurePump, startWatchLocked) checks that it is active. One that something
// still holds goes terminate's whole way; one that another termination
// (Shutdown's) already began is left to it (terminate returns at once for
// a stateless session).
func (s *session) endEphemeral() {
	s.life.Lock()
	s.mu.Lock()
	quiet := s.work == 0 && len(s.posts) == 0 && s.get == nil && s.pump.done == nil && s.watch.done == nil &&
		s.state.CompareAndSwap(stateActive, stateTerminated)
	s.mu.Unlock()
	if !quiet {
		s.life.Unlock()
		s.terminate(context.Background(), errRequestDone)
		return
	}
	s.cancel(errRequestDone)
	s.h.removeSession(s.id)
	s.h.mcp.UnregisterSession(context.Background(), s.id) // as finishTerminate: whatever registered it
	close(s.ended)
	s.life.Unlock()
}
