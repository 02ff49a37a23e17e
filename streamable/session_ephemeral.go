package streamable

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
)

// newEphemeralSession makes the session one request runs on, in stateless
// mode or of protocol 2026-07-28 (modern): its id (Handler.ephemeralID) is
// never issued to a client, and no lookup by a client's id finds the
// session (lookup, adoptOnce). It has no qMade (bareSession):
// that channel only wakes a pump at once when the session's queues are
// made after the pump started, and a pump of an ephemeral session (with
// replicas, should anything start one) learns it at its next idle tick
// instead, or ends with the session's one request.
func newEphemeralSession(h *Handler, prefix string, modern bool) *session {
	s := bareSession(h, h.ephemeralID(prefix))
	s.stateless, s.modern = true, modern
	return s
}

// base32 is the alphabet ephemeral ids are written in (RFC 4648's, as
// rand.Text).
const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// ephemeralTag returns 13 characters of base32 carrying 64 random bits
// from the runtime's per-thread generator: what tells one Handler's
// ephemeral ids from another's (New draws it once). Its width is fixed, so
// that the count after it in an id cannot run into it.
func ephemeralTag() string {
	var b [13]byte
	return string(appendBase32(b[:0], rand.Uint64(), len(b)))
}

// appendBase32 appends n in base32, least significant digit first, in at
// least digits digits (13 hold any uint64: 12 of 5 bits and one of 4).
func appendBase32(b []byte, n uint64, digits int) []byte {
	for i := 0; i < digits || n > 0; i++ {
		b = append(b, base32[n&31])
		n >>= 5
	}
	return b
}

// ephemeralIDs is what a Handler makes its ephemeral sessions' ids of
// (ephemeralID): its tag, drawn by New, and the last number given.
type ephemeralIDs struct {
	tag  string
	last atomic.Uint64
}

// maxEphemeralPrefix is the longest prefix ephemeralID is given
// ("stateless-").
const maxEphemeralPrefix = 16

// ephemeralID returns prefix, the handler's tag and a number that no
// other call on h returns, in base32 (least significant digit first): an
// id no other session of h has, and none of another Handler's but for a
// chance of 2^-64 that the two drew the same tag (mcp-go keys the
// requests in flight on one MCPServer by their session's id, and Handlers
// may share an MCPServer). It costs an atomic add and one allocation: no
// random bits a request, from the operating system's generator, which a
// session id needs, nor from the runtime's. An ephemeral session's id
// need not be a secret: nothing finds an ephemeral session by a client's
// id, so a guessed one names nothing.
func (h *Handler) ephemeralID(prefix string) string {
	var buf [maxEphemeralPrefix + 13 + 13]byte
	b := append(buf[:0], prefix...)
	b = append(b, h.ephemeral.tag...)
	return string(appendBase32(b, h.ephemeral.last.Add(1), 1))
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
	quiet := s.work == 0 && len(s.posts) == 0 && s.get == nil && (s.rep == nil || s.rep.pump.done == nil && s.rep.watch.done == nil) &&
		s.state.CompareAndSwap(stateActive, stateTerminated)
	s.mu.Unlock()
	if !quiet {
		s.life.Unlock()
		s.terminate(context.Background(), errRequestDone)
		return
	}
	s.endContextWith(&errRequestDone)
	s.h.removeSession(s.id)
	s.h.mcp.UnregisterSession(context.Background(), s.id) // as finishTerminate: whatever registered it
	s.closeEnded()
	s.life.Unlock()
}
