package streamable

import (
	"context"
	"math/rand/v2"
)

// newEphemeralSession makes the session one request runs on, in stateless
// mode or of protocol 2026-07-28 (modern): its id, prefix and
// ephemeralID's 26 characters, is never issued to a client, and no lookup
// by a client's id finds the session (lookup, adoptOnce). It has no qMade
// (bareSession):
// that channel only wakes a pump at once when the session's queues are
// made after the pump started, and a pump of an ephemeral session (with
// replicas, should anything start one) learns it at its next idle tick
// instead, or ends with the session's one request.
func newEphemeralSession(h *Handler, prefix string, modern bool) *session {
	s := bareSession(h, ephemeralID(prefix))
	s.stateless, s.modern = true, modern
	return s
}

// base32 is the alphabet ephemeralID writes in (RFC 4648's, as rand.Text).
const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// ephemeralID returns prefix and 26 characters of base32 carrying 128
// random bits from the runtime's per-thread generator: unique among a
// handler's sessions but for a chance of about 2^-64 over 2^32 requests
// running at once. It costs no call to the operating system's or
// crypto/rand's generator, which a session id needs and an ephemeral
// session's does not: nothing finds an ephemeral session by a client's id,
// so a guessed one names nothing.
func ephemeralID(prefix string) string {
	b := make([]byte, len(prefix), len(prefix)+26)
	copy(b, prefix)
	for _, bits := range [2]uint64{rand.Uint64(), rand.Uint64()} {
		for range 13 { // 12 characters of 5 bits and one of 4
			b = append(b, base32[bits&31])
			bits >>= 5
		}
	}
	return string(b)
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
