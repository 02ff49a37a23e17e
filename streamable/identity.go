package streamable

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"

	"github.com/lifeline-mcp/lifeline/auth"
)

// callerKey is the context key under which WithCallerIdentity puts the
// caller's identity.
type callerKey struct{}

// WithCallerIdentity returns ctx carrying id as the caller's identity: what
// an authentication middleware in front of the Handler calls on the
// request's context once it has verified the caller, so that, with
// Config.Identify unset, sessions are bound to id (see Config.Identify).
// An empty id means anonymous.
func WithCallerIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// CallerIdentity returns the identity WithCallerIdentity put in ctx, else
// the UserID of the token auth.RequireBearerToken verified (so that a
// session behind that middleware is bound to the token's user without more
// wiring), or "" (anonymous) if there is neither. A tool handler's context
// derives from the HTTP request's, so it reads the middleware's identity
// here too.
func CallerIdentity(ctx context.Context) string {
	if id, ok := ctx.Value(callerKey{}).(string); ok {
		return id
	}
	return auth.IdentityFromContext(ctx)
}

// callerDigest is what a session record keeps of a caller identity: its
// SHA-256 in hex, so that a dump of the store does not leak identities
// (or tokens, if an application uses one as identity). "" stays "".
func callerDigest(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// callerLog names a caller digest in logs: its first 12 hex digits, or
// "anonymous".
func callerLog(digest string) string {
	if digest == "" {
		return "anonymous"
	}
	return digest[:min(12, len(digest))] // a custom store may return anything
}

// identify returns the digest of the request's caller identity ("" for
// anonymous), or a 401 if Config.Identify failed.
func (h *Handler) identify(r *http.Request) (string, *failure) {
	if h.cfg.Identify == nil {
		return callerDigest(CallerIdentity(r.Context())), nil
	}
	id, err := h.cfg.Identify(r)
	if err != nil {
		return "", errUnidentified(err)
	}
	return callerDigest(id), nil
}

// checkCaller lets a request on s through if s is bound to no caller or to
// the request's; else it answers 403, before anything of the session is
// touched, and the refusal is logged and counted (Stats.CallerMismatches).
func (h *Handler) checkCaller(r *http.Request, s *session) *failure {
	return h.checkBound(r, s.id, s.caller)
}

// checkBound is checkCaller for the session id bound to the caller digest
// bound: also used before a replica adopts a session, from its record.
func (h *Handler) checkBound(r *http.Request, id, bound string) *failure {
	if bound == "" {
		return nil
	}
	got, f := h.identify(r)
	if f != nil {
		return f
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(bound)) == 1 {
		return nil
	}
	h.callerMismatches.Add(1)
	h.log.Warn("lifeline: refused a request from a caller the session is not bound to",
		"session", logID(id), "method", r.Method, "bound", callerLog(bound), "caller", callerLog(got))
	return errCallerMismatch()
}

// sameCaller reports whether the request may act on s without asking the
// store: s is bound to no caller, or to the request's. Used by the fast
// path of responses (deliverLocal), which falls back to the checked path.
func (h *Handler) sameCaller(r *http.Request, s *session) bool {
	if s.caller == "" {
		return true
	}
	got, f := h.identify(r)
	return f == nil && subtle.ConstantTimeCompare([]byte(got), []byte(s.caller)) == 1
}
