package auth

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// DefaultMaxTokenBytes is RequireBearerTokenOptions.MaxTokenBytes's default:
// room for a large signed JWT.
const DefaultMaxTokenBytes = 8 << 10

// RequireBearerTokenOptions configures RequireBearerToken. The zero value
// (or nil) requires a valid, unexpired token with an expiration, names no
// metadata and declares no scopes.
type RequireBearerTokenOptions struct {
	// ResourceMetadataURL is the absolute URL of the protected-resource
	// metadata (RFC 9728), sent as resource_metadata in every challenge
	// so that a client can discover the authorization server; see
	// server.ProtectedResourceMetadataURL. Empty sends none.
	ResourceMetadataURL string
	// Scopes are the scopes every request needs: a token lacking one gets
	// 403 error="insufficient_scope". They are also sent as scope in
	// every challenge.
	Scopes []string
	// AllowMissingExpiration accepts a token whose TokenInfo.Expiration is
	// zero (one that does not expire, such as a static token). Without it
	// such a token gets 401, as in the Go SDK.
	AllowMissingExpiration bool
	// ClockSkew is how long after its Expiration a token is still
	// accepted, for an authorization server whose clock runs behind.
	ClockSkew time.Duration
	// MaxTokenBytes bounds the token: a longer one gets 401 invalid_token
	// without reaching the verifier. Zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// Now is the time source for expiry (time.Now when nil).
	Now func() time.Time
	// Logger receives a Warn line for each verifier failure that is not
	// the token's (ErrInvalidToken) and a Debug line for each refusal
	// (slog.Default() when nil). Tokens are never logged.
	Logger *slog.Logger
}

// RequireBearerToken returns middleware that lets a request through to the
// handler it wraps only with a valid bearer token, its TokenInfo then in
// the request's context (TokenInfoFromContext, IdentityFromRequest).
// Otherwise it answers, without reading the request's body (a request that
// may have one gets "Connection: close"), with a JSON-RPC error body of id
// null and, for 401 and 403, a WWW-Authenticate: Bearer challenge that
// carries resource_metadata and scope when configured:
//
//   - no Authorization header, or another scheme than Bearer: 401 with no
//     error code (RFC 6750 section 3.1);
//   - an empty, malformed or over-long token, one the verifier refuses with
//     ErrInvalidToken, one past its Expiration (plus ClockSkew), or one
//     without an Expiration unless AllowMissingExpiration: 401
//     error="invalid_token";
//   - a valid token lacking one of Scopes: 403 error="insufficient_scope";
//   - more than one Authorization header, or a verifier error wrapping
//     ErrOAuth: 400 error="invalid_request";
//   - any other verifier error, or a nil TokenInfo: 503 with Retry-After
//     (the verifier's trouble, not the client's).
//
// A CORS preflight (OPTIONS with Access-Control-Request-Method), which
// never carries credentials, goes through unverified, for the handler to
// answer. opts may be nil.
func RequireBearerToken(verifier TokenVerifier, opts *RequireBearerTokenOptions) func(http.Handler) http.Handler {
	g := newGuard(verifier, opts)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isPreflight(r) {
				next.ServeHTTP(w, r)
				return
			}
			info, f := g.verify(r)
			if f != nil {
				g.refuse(w, r, f)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), info)))
		})
	}
}

// guard is RequireBearerToken's settings, fixed when it is called.
type guard struct {
	verifier  TokenVerifier
	opts      RequireBearerTokenOptions
	challenge string // the parameters every challenge carries
	now       func() time.Time
	logger    *slog.Logger
	maxToken  int
}

func newGuard(verifier TokenVerifier, opts *RequireBearerTokenOptions) *guard {
	g := &guard{verifier: verifier, now: time.Now, logger: slog.Default(), maxToken: DefaultMaxTokenBytes}
	if opts != nil {
		g.opts = *opts
		g.opts.Scopes = slices.Clone(opts.Scopes)
	}
	if g.opts.Now != nil {
		g.now = g.opts.Now
	}
	if g.opts.Logger != nil {
		g.logger = g.opts.Logger
	}
	if g.opts.MaxTokenBytes > 0 {
		g.maxToken = g.opts.MaxTokenBytes
	}
	var params []string
	if g.opts.ResourceMetadataURL != "" {
		params = append(params, "resource_metadata="+quote(g.opts.ResourceMetadataURL))
	}
	if len(g.opts.Scopes) > 0 {
		params = append(params, "scope="+quote(strings.Join(g.opts.Scopes, " ")))
	}
	g.challenge = strings.Join(params, ", ")
	return g
}

func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
}

// verify returns the TokenInfo of r's valid token, or the refusal.
func (g *guard) verify(r *http.Request) (*TokenInfo, *failure) {
	token, f := g.bearerToken(r)
	if f != nil {
		return nil, f
	}
	info, err := g.verifier(r.Context(), token, r)
	switch {
	case errors.Is(err, ErrInvalidToken):
		return nil, errInvalidToken("the token was not accepted: " + err.Error())
	case errors.Is(err, ErrOAuth):
		return nil, errInvalidRequest(err.Error())
	case err != nil:
		return nil, errVerifier(err)
	case info == nil:
		return nil, errVerifier(errors.New("the verifier returned no token info"))
	}
	if info.Expiration.IsZero() {
		if !g.opts.AllowMissingExpiration {
			return nil, errInvalidToken("the token has no expiration")
		}
	} else if !g.now().Before(info.Expiration.Add(g.opts.ClockSkew)) {
		return nil, errInvalidToken("the token has expired")
	}
	for _, s := range g.opts.Scopes {
		if !slices.Contains(info.Scopes, s) {
			return nil, errInsufficientScope(g.opts.Scopes)
		}
	}
	return info, nil
}

// bearerToken returns the token of r's Authorization header.
func (g *guard) bearerToken(r *http.Request) (string, *failure) {
	values := r.Header.Values("Authorization")
	switch {
	case len(values) == 0:
		return "", errNoToken("no Authorization header")
	case len(values) > 1:
		return "", errInvalidRequest("more than one Authorization header")
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errNoToken("the Authorization header's scheme is not Bearer")
	}
	token = strings.TrimLeft(token, " ")
	switch {
	case token == "":
		return "", errInvalidToken("the Bearer token is empty")
	case len(token) > g.maxToken:
		return "", errInvalidToken("the token is longer than " + itoa(g.maxToken) + " bytes")
	case !isB64Token(token):
		return "", errInvalidToken("the token is malformed (RFC 6750 allows letters, digits and -._~+/ then trailing =)")
	}
	return token, nil
}

// isB64Token reports whether s is RFC 6750's b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	end := len(strings.TrimRight(s, "="))
	if end == 0 {
		return false
	}
	for i := range end {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
