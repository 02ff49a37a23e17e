package auth_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/auth"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A tool reads the verified token's info, and its identity, from its
// context: lifeline derives every message's context from the HTTP
// request's, so what the middleware put there reaches the tool.
func TestToolReadsTheVerifiedTokenFromItsContext(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{})
	c := client(url, is.issue("alice", time.Hour, "mcp:tools"))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	w := callWhoami(t, ctx, c)
	want := whoami{UserID: "alice", Scopes: []string{"mcp:tools"}, Tenant: "t-alice", Identity: "alice", HasToken: true}
	if w.UserID != want.UserID || !slices.Equal(w.Scopes, want.Scopes) || w.Tenant != want.Tenant ||
		w.Identity != want.Identity || !w.HasToken {
		t.Fatalf("the tool saw %+v, want %+v", w, want)
	}
}

// The same holds without sessions: stateless mode and 2026-07-28 requests.
func TestToolReadsTheVerifiedTokenWithoutSessions(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{Stateless: true})
	c := client(url, is.issue("bob", time.Hour))
	c.ProtocolVersion = testutil.ProtocolVersion
	if w := callWhoami(t, ctx, c); w.Identity != "bob" || !w.HasToken {
		t.Fatalf("stateless: the tool saw %+v, want bob's token", w)
	}

	url = serve(t, is, is.options(nil), streamable.Config{})
	c = client(url, is.issue("carol", time.Hour))
	c.ProtocolVersion = mcp.ProtocolVersion20260728
	c.Header[mcp.HeaderMethod] = "tools/call"
	c.Header[mcp.HeaderName] = "whoami"
	resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "whoami", "_meta": map[string]any{
			mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities: map[string]any{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if w := whoamiOf(t, resp); w.Identity != "carol" || !w.HasToken {
		t.Fatalf("2026-07-28: the tool saw %+v, want carol's token", w)
	}
}

// A request without a token gets 401 and a challenge naming the metadata,
// with no error code (RFC 6750 section 3.1), and the verifier is not
// consulted; the body is not read for the answer (the connection closes
// after it).
func TestNoTokenGets401WithTheChallenge(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{})
	for _, header := range []string{"", "Basic YWxpY2U6c2VjcmV0"} {
		c := client(url, "")
		if header != "" {
			c.Header = map[string]string{"Authorization": header}
		}
		resp, err := c.Call(ctx, "initialize", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		r := expectRefusal(t, resp, http.StatusUnauthorized)
		p := params(t, r.challenge)
		if p["resource_metadata"] != metadataURL || p["error"] != "" {
			t.Errorf("Authorization %q: challenge %q, want resource_metadata=%q and no error", header, r.challenge, metadataURL)
		}
		if !strings.Contains(r.body.Error.Message, "Bearer") {
			t.Errorf("Authorization %q: message %q does not say what to send", header, r.body.Error.Message)
		}
	}
	// The body was not read for the answer: the connection closes.
	req, err := client(url, "").NewRequest(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("status %d, connection closing %v: want 401 and a closing connection", resp.StatusCode, resp.Close)
	}
	if n := is.calls.Load(); n != 0 {
		t.Fatalf("the verifier was called %d times for requests without a bearer token", n)
	}
}

// Bad tokens get 401 error="invalid_token": unknown, empty, malformed,
// longer than the bound (which the verifier never sees), expired, or
// without an expiration.
func TestBadTokensGet401InvalidToken(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	const max = 64
	url := serve(t, is, is.options(func(o *auth.RequireBearerTokenOptions) { o.MaxTokenBytes = max }), streamable.Config{})
	expired := is.issue("carol", time.Minute)
	is.clock.Advance(time.Minute)
	noExpiry := is.issue("dave", 0)
	for _, tc := range []struct {
		name, header string
		verified     bool // the verifier saw the token
		says         string
	}{
		{"unknown", "Bearer " + strings.Repeat("a", 32), true, "not accepted"},
		{"empty", "Bearer", false, "empty"},
		{"spaces only", "Bearer    ", false, "empty"},
		{"two words", "Bearer abc def", false, "malformed"},
		{"bad character", "Bearer abc#def", false, "malformed"},
		{"only padding", "Bearer ==", false, "malformed"},
		{"over the bound", "Bearer " + strings.Repeat("a", max+1), false, "longer than 64 bytes"},
		{"at the bound", "Bearer " + strings.Repeat("b", max), true, "not accepted"},
		{"expired", "Bearer " + expired, true, "expired"},
		{"no expiration", "Bearer " + noExpiry, true, "no expiration"},
		{"lower-case scheme, expired", "bearer " + expired, true, "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := is.calls.Load()
			c := client(url, "")
			c.Header = map[string]string{"Authorization": tc.header}
			resp, err := c.Call(ctx, "initialize", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			r := expectRefusal(t, resp, http.StatusUnauthorized)
			p := params(t, r.challenge)
			if p["error"] != "invalid_token" || p["resource_metadata"] != metadataURL {
				t.Errorf("challenge %q, want error=invalid_token and the metadata", r.challenge)
			}
			if r.body.Error.Data["error"] != "invalid_token" || !strings.Contains(r.body.Error.Message, tc.says) {
				t.Errorf("body error %+v, want data.error invalid_token and a message saying %q", r.body.Error, tc.says)
			}
			if verified := is.calls.Load() > before; verified != tc.verified {
				t.Errorf("the verifier saw the token: %v, want %v", verified, tc.verified)
			}
		})
	}
}

// A session whose token expires is refused from then on, though it was
// served before; within ClockSkew of the expiry it still is.
func TestExpiredTokenIsRefusedMidSession(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(func(o *auth.RequireBearerTokenOptions) { o.ClockSkew = 30 * time.Second }), streamable.Config{})
	c := client(url, is.issue("erin", time.Minute))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	is.clock.Advance(time.Minute + 29*time.Second)
	if w := callWhoami(t, ctx, c); w.Identity != "erin" {
		t.Fatalf("within the skew: the tool saw %+v", w)
	}
	is.clock.Advance(time.Second)
	resp, err := c.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := expectRefusal(t, resp, http.StatusUnauthorized)
	if p := params(t, r.challenge); p["error"] != "invalid_token" || !strings.Contains(r.body.Error.Message, "expired") {
		t.Fatalf("challenge %q, message %q: want invalid_token, expired", r.challenge, r.body.Error.Message)
	}
}

// A token lacking a declared scope gets 403 error="insufficient_scope"
// with the scopes needed; every challenge carries them.
func TestMissingScopeGets403InsufficientScope(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(func(o *auth.RequireBearerTokenOptions) { o.Scopes = []string{"mcp:read", "mcp:tools"} }),
		streamable.Config{})

	resp, err := client(url, is.issue("frank", time.Hour, "mcp:read")).Call(ctx, "initialize", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	r := expectRefusal(t, resp, http.StatusForbidden)
	p := params(t, r.challenge)
	if p["error"] != "insufficient_scope" || p["scope"] != "mcp:read mcp:tools" || p["resource_metadata"] != metadataURL {
		t.Fatalf("challenge %q, want insufficient_scope, scope and the metadata", r.challenge)
	}
	if r.body.Error.Data["error"] != "insufficient_scope" {
		t.Fatalf("body error %+v", r.body.Error)
	}

	resp, err = client(url, "").Call(ctx, "initialize", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	r = expectRefusal(t, resp, http.StatusUnauthorized)
	if p := params(t, r.challenge); p["scope"] != "mcp:read mcp:tools" {
		t.Fatalf("401 challenge %q does not name the scopes", r.challenge)
	}

	c := client(url, is.issue("grace", time.Hour, "mcp:tools", "mcp:read", "other"))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("a token with every scope: %v", err)
	}
}

// Requests malformed in OAuth's terms get 400 invalid_request; a verifier
// that fails for its own reasons gets the client a 503 with Retry-After.
func TestMalformedRequestsAndVerifierFailures(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name     string
		verify   auth.TokenVerifier
		header   []string
		status   int
		code     string
		says     string
		retry    bool
		challeng bool
	}{
		{"two Authorization headers", nil, []string{"Bearer abc", "Bearer def"}, http.StatusBadRequest, "invalid_request", "more than one", false, false},
		{"verifier says ErrOAuth", func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return nil, errors.Join(auth.ErrOAuth, errors.New("audience missing"))
		}, []string{"Bearer abc"}, http.StatusBadRequest, "invalid_request", "audience missing", false, false},
		{"verifier down", func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return nil, errors.New("introspection endpoint unreachable")
		}, []string{"Bearer abc"}, http.StatusServiceUnavailable, "", "introspection endpoint unreachable", true, false},
		{"verifier returns nothing", func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return nil, nil
		}, []string{"Bearer abc"}, http.StatusServiceUnavailable, "", "no token info", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verify := tc.verify
			if verify == nil {
				verify = func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
					t.Error("the verifier was called")
					return nil, auth.ErrInvalidToken
				}
			}
			h := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL, Logger: quiet})(
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { t.Error("the request got through") }))
			url := serveHandler(t, h)
			req, err := client(url, "").NewRequest(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tc.header {
				req.Header.Add("Authorization", v)
			}
			resp, err := client(url, "").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r := expectRefusal(t, resp, tc.status)
			if r.body.Error.Data["error"] != tc.code || !strings.Contains(r.body.Error.Message, tc.says) {
				t.Errorf("body error %+v, want code %q and a message saying %q", r.body.Error, tc.code, tc.says)
			}
			if got := r.header.Get("Retry-After") != ""; got != tc.retry {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
			if r.challenge != "" {
				t.Errorf("a %d carries a challenge %q", tc.status, r.challenge)
			}
		})
	}
}

// AllowMissingExpiration accepts a token that never expires.
func TestAllowMissingExpiration(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(func(o *auth.RequireBearerTokenOptions) { o.AllowMissingExpiration = true }), streamable.Config{})
	c := client(url, is.issue("heidi", 0))
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	is.clock.Advance(1000 * time.Hour)
	if w := callWhoami(t, ctx, c); w.Identity != "heidi" {
		t.Fatalf("the tool saw %+v", w)
	}
}

// A CORS preflight carries no credentials: it reaches the handler, which
// answers it, without the verifier.
func TestPreflightGoesThroughUnverified(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{AllowedOrigins: []string{"https://app.example"}})
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("preflight: status %d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	if n := is.calls.Load(); n != 0 {
		t.Fatalf("the verifier was called %d times for a preflight", n)
	}
}

// IdentityFromRequest names the verified token's user, and nothing for a
// request the middleware did not verify.
func TestIdentityFromRequest(t *testing.T) {
	ctx := testCtx(t)
	if id := auth.IdentityFromRequest(httpRequest(t, ctx)); id != "" {
		t.Fatalf("unverified request: identity %q", id)
	}
	is := newIssuer()
	token := is.issue("ivan", time.Hour)
	got := make(chan string, 1)
	h := auth.RequireBearerToken(is.verify, is.options(nil))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- auth.IdentityFromRequest(r)
	}))
	url := serveHandler(t, h)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if id := <-got; id != "ivan" {
		t.Fatalf("identity %q, want ivan", id)
	}
}
