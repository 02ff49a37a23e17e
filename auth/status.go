package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/bodydrain"
)

// JSON-RPC error codes of the answers below (the transport's own).
const (
	codeInvalidRequest = -32600
	codeServerError    = -32000
)

// verifierRetryAfter is the Retry-After of a 503 answered because the
// verifier failed.
const verifierRetryAfter = time.Second

// failure is a refusal: a status, the OAuth error code of its challenge
// (RFC 6750 section 3.1; "" for none) and what was wrong. Every status the
// middleware answers is built by one of the constructors below, so its
// whole policy reads in one place.
type failure struct {
	status    int
	oauthCode string // the challenge's error parameter
	message   string
}

// 400 Bad Request.
func errInvalidRequest(detail string) *failure {
	return &failure{status: http.StatusBadRequest, oauthCode: "invalid_request",
		message: "Bad Request: " + detail}
}

// 401 Unauthorized.
func errNoToken(detail string) *failure {
	return &failure{status: http.StatusUnauthorized,
		message: "Unauthorized: " + detail + "; send an Authorization: Bearer token"}
}

func errInvalidToken(detail string) *failure {
	return &failure{status: http.StatusUnauthorized, oauthCode: "invalid_token",
		message: "Unauthorized: " + detail}
}

// 403 Forbidden.
func errInsufficientScope(scopes []string) *failure {
	return &failure{status: http.StatusForbidden, oauthCode: "insufficient_scope",
		message: fmt.Sprintf("Forbidden: the token lacks a required scope (needs %q)", strings.Join(scopes, " "))}
}

// 503 Service Unavailable.
func errVerifier(err error) *failure {
	return &failure{status: http.StatusServiceUnavailable,
		message: "Service Unavailable: the token could not be verified: " + err.Error()}
}

// refuse answers f. The request's body is not read for the answer: when it
// may have one, the connection is closed after the answer, and what the
// client still sends of the body is read and dropped for bodydrain.Linger
// at most (bodydrain.DropUnread), so that an unauthenticated client cannot
// hold the handler, and one still sending its body is not reset under the
// answer.
func (g *guard) refuse(w http.ResponseWriter, r *http.Request, f *failure) {
	h := w.Header()
	if f.status == http.StatusUnauthorized || f.status == http.StatusForbidden {
		h.Set("WWW-Authenticate", g.challengeFor(f))
	}
	if f.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(int(verifierRetryAfter/time.Second)))
		g.logger.Warn("lifeline: bearer token verification failed", "method", r.Method, "path", r.URL.Path, "err", f.message)
	} else {
		g.logger.Debug("lifeline: request refused", "status", f.status, "method", r.Method, "path", r.URL.Path, "reason", f.message)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	closing := r.ContentLength != 0
	if closing {
		h.Set("Connection", "close")
	}
	code := codeInvalidRequest
	if f.status >= 500 {
		code = codeServerError
	}
	var data any
	if f.oauthCode != "" {
		data = map[string]string{"error": f.oauthCode}
	}
	body, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: json.RawMessage("null"),
		Error: rpcErrorBody{Code: code, Message: f.message, Data: data}})
	body = append(body, '\n')
	// Sized, so that the answer is whole when DropUnread sends it.
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
	if closing {
		bodydrain.DropUnread(w, r)
	}
}

// challengeFor is the WWW-Authenticate value answering f: the Bearer
// scheme with f's error code, then the configured parameters.
func (g *guard) challengeFor(f *failure) string {
	var params []string
	if f.oauthCode != "" {
		params = append(params, "error="+quote(f.oauthCode))
	}
	if g.challenge != "" {
		params = append(params, g.challenge)
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}

// quote returns s as an RFC 9110 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

// rpcError is a JSON-RPC error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}
