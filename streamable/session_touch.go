package streamable

import (
	"context"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// A request asks the store whether its session is live, and extends the
// session's idle expiry (Store.Touch). With a shared store that can check
// liveness alone more cheaply (sessionstore.LivenessChecker: Redis, one
// HGET instead of a script that also writes the record and the index), a
// replica extends a session's expiry at most once per touchRefresh of the
// idle TTL and only checks it in between: every request still learns at
// once of a session ended on another replica, and the session expires at
// the earliest IdleTTL less that fraction after its last request here.

// touchRefresh is the fraction of the idle TTL within which a replica
// does not extend a session's expiry again.
const touchRefresh = 16

// livenessChecker reports whether store is shared and checks liveness
// apart from Touch.
func livenessChecker(store sessionstore.Store) bool {
	_, ok := store.(sessionstore.LivenessChecker)
	return ok && isShared(store)
}

// touch checks that s is live in the store and extends its idle expiry,
// unless this replica extended it less than IdleTTL/touchRefresh ago:
// then it only checks.
func (h *Handler) touch(ctx context.Context, s *session) error {
	ttl := h.cfg.IdleTTL
	if !h.checker || ttl <= 0 {
		return h.store.Touch(ctx, s.id, ttl)
	}
	now := h.cfg.Clock.Now()
	// A clock that stepped back since (a negative age) touches: the
	// window never outlasts what the store's own clock allows.
	if last := s.rep.touchedAt.Load(); last != 0 {
		if age := now.Sub(time.Unix(0, last)); age >= 0 && age < ttl/touchRefresh {
			return h.store.CheckLive(ctx, s.id)
		}
	}
	err := h.store.Touch(ctx, s.id, ttl)
	if err == nil {
		s.rep.touchedAt.Store(now.UnixNano())
	}
	return err
}
