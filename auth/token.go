package auth

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// TokenInfo is what a TokenVerifier learned from a bearer token.
type TokenInfo struct {
	// Scopes are the token's OAuth scopes.
	Scopes []string
	// Expiration is when the token stops being valid. RequireBearerToken
	// refuses a token at or after it (allowing ClockSkew), and, unless
	// AllowMissingExpiration is set, a token whose Expiration is zero.
	Expiration time.Time
	// UserID identifies who the token was issued to (its subject). It is
	// the caller identity IdentityFromRequest returns; a verifier that
	// leaves it empty authenticates a caller without naming it.
	UserID string
	// Extra holds whatever else the verifier wants tools to see.
	Extra map[string]any
}

// ErrInvalidToken is what a TokenVerifier returns (or wraps) for a token it
// does not accept: unknown, revoked, malformed or expired. The request gets
// 401 with error="invalid_token".
var ErrInvalidToken = errors.New("invalid token")

// ErrOAuth is what a TokenVerifier returns (or wraps) for a request that
// is malformed in OAuth's terms. The request gets 400 with
// error="invalid_request".
var ErrOAuth = errors.New("oauth error")

// TokenVerifier checks a bearer token and says what it grants. It returns
// an error wrapping ErrInvalidToken for a token it refuses; any other error
// (its authorization server is unreachable, say) is the server's, not the
// client's, and the request gets 503. req is the request being served, for
// a verifier that checks the token against it (its audience, say); ctx is
// req's context.
type TokenVerifier func(ctx context.Context, token string, req *http.Request) (*TokenInfo, error)

type tokenInfoKey struct{}

// WithTokenInfo returns a copy of ctx carrying info, as RequireBearerToken
// puts it in a verified request's context; for another authentication
// middleware, and for tests.
func WithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, tokenInfoKey{}, info)
}

// TokenInfoFromContext returns the TokenInfo of the verified token in ctx,
// or nil when ctx carries none. Under lifeline, a tool's, resource's,
// prompt's or hook's context is derived from its HTTP request's, so it
// carries the request's token.
func TokenInfoFromContext(ctx context.Context) *TokenInfo {
	info, _ := ctx.Value(tokenInfoKey{}).(*TokenInfo)
	return info
}

// IdentityFromRequest returns the caller identity of r: the UserID of the
// token RequireBearerToken verified for it, or "" when r carries no
// verified token (or one that names no user).
func IdentityFromRequest(r *http.Request) string {
	return IdentityFromContext(r.Context())
}

// IdentityFromContext is IdentityFromRequest for a context: the UserID of
// the verified token in ctx, or "".
func IdentityFromContext(ctx context.Context) string {
	if info := TokenInfoFromContext(ctx); info != nil {
		return info.UserID
	}
	return ""
}
