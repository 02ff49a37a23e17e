package streamable

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC error codes used in error bodies.
const (
	codeParseError      = -32700
	codeInvalidRequest  = -32600
	codeServerError     = -32000
	codeSessionNotFound = -32001
)

// failure is an HTTP error answer: a status and a JSON-RPC error body that
// says what was wrong. Every status the transport answers with other than
// 200 and 202 is built by one of the constructors below, so the whole status
// policy reads in one place.
type failure struct {
	status     int
	code       int
	message    string
	id         json.RawMessage
	retryAfter time.Duration
	allow      string
	data       any         // the JSON-RPC error's data, if any
	storeDown  bool        // the store failed (errStore): a degraded path may still serve
	closeConn  bool        // answered with Connection: close (the body was not read whole)
	cause      answerCause // lifeline.cause of lifeline.http.responses (metrics_causes.go)
}

// closing marks f to close the connection after it is written, and
// returns f: an answer given without reading (all of) the request's body.
// refuse writes it, then reads and drops what is left of the body for a
// bounded time (bodydrain.DropUnread), so that a client still sending is
// not reset under its answer and a trickling one cannot hold the handler.
func (f *failure) closing() *failure {
	f.closeConn = true
	return f
}

func (f *failure) Error() string { return fmt.Sprintf("%d: %s", f.status, f.message) }

// 400 Bad Request.
func errMissingSessionID() *failure {
	return &failure{cause: causeMissingSessionID, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Bad Request: Mcp-Session-Id header is required (send initialize first to get one)"}
}

func errInitializeWithSession() *failure {
	return &failure{cause: causeInitializeWithSession, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Bad Request: initialize must not carry an Mcp-Session-Id header"}
}

func errParse(detail string) *failure {
	return &failure{cause: causeParseError, status: http.StatusBadRequest, code: codeParseError,
		message: "Parse error: " + detail}
}

func errInvalidMessage(detail string) *failure {
	return &failure{cause: causeInvalidMessage, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Invalid Request: " + detail}
}

func errUnsupportedVersion(v string, served []string) *failure {
	return &failure{cause: causeUnsupportedVersion, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: fmt.Sprintf("Bad Request: unsupported MCP-Protocol-Version %q (supported: %s)", v, strings.Join(served, ", "))}
}

// errNoSessionVersions refuses initialize on a handler that serves only
// versions without sessions (2026-07-28), naming them in data as that
// version's -32022 does.
func errNoSessionVersions(requested string, served []string) *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: mcp.INVALID_PARAMS,
		message: fmt.Sprintf("Invalid params: this server serves no protocol version with sessions (supported: %s); use server/discover", strings.Join(served, ", ")),
		data:    mcp.UnsupportedProtocolVersionData{Supported: served, Requested: requested}}
}

func errBatchVersion(v string) *failure {
	return &failure{cause: causeBatchVersion, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: fmt.Sprintf("Invalid Request: JSON-RPC batches are part of protocol version %s only, and this request uses %s; send one message per POST", batchVersion, v)}
}

func errNilRequest() *failure {
	return &failure{cause: causeInvalidMessage, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Bad Request: Handle was given a nil request"}
}

func errUnknownResponseID(id json.RawMessage) *failure {
	return &failure{cause: causeUnknownResponseID, status: http.StatusBadRequest, code: codeInvalidRequest, id: id,
		message: fmt.Sprintf("Bad Request: no request with id %s was sent to this session", id)}
}

// 2026-07-28 request validation (400): the codes that version defines.
func errModernHeader(message string) *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: mcp.HEADER_MISMATCH,
		message: "Bad Request: " + message}
}

func errModernMeta(message string) *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: mcp.INVALID_PARAMS,
		message: "Invalid params: " + message}
}

func errModernVersion(requested string, supported []string) *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		message: fmt.Sprintf("Unsupported protocol version %q (supported: %s)", requested, strings.Join(supported, ", ")),
		data:    mcp.UnsupportedProtocolVersionData{Supported: supported, Requested: requested}}
}

// errListenCannotStream refuses a listen stream through Handle with a
// response writer that cannot stream: nothing would reach the client
// before the stream's end.
func errListenCannotStream() *failure {
	return &failure{cause: causeInvalidMessage, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Invalid Request: this server's response writer cannot stream, so it cannot hold a subscriptions/listen stream"}
}

func errModernResponse() *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Invalid Request: protocol version 2026-07-28 has no server-to-client requests, so a client never sends a response; multi round-trip results replace them"}
}

func errModernBatch() *failure {
	return &failure{cause: causeModernInvalid, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: "Invalid Request: protocol version 2026-07-28 has no JSON-RPC batches; send one message per POST"}
}

// modernErrorStatus is the HTTP status of a 2026-07-28 request answered
// with a JSON-RPC error of code (before any event was streamed): 404 for
// an unknown method, 400 for a request the client must change, and 200
// for errors of the call itself.
func modernErrorStatus(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	default:
		return http.StatusOK
	}
}

// 403 Forbidden.
func errForbiddenHost(host string) *failure {
	return &failure{cause: causeForbiddenHost, status: http.StatusForbidden, code: codeInvalidRequest,
		message: fmt.Sprintf("Forbidden: Host %q is not a local name, but the request reached a loopback listener (DNS rebinding protection)", host)}
}

func errForbiddenOrigin(origin string) *failure {
	return &failure{cause: causeForbiddenOrigin, status: http.StatusForbidden, code: codeInvalidRequest,
		message: fmt.Sprintf("Forbidden: Origin %q is not allowed", origin)}
}

func errCallerMismatch() *failure {
	return &failure{cause: causeCallerMismatch, status: http.StatusForbidden, code: codeInvalidRequest,
		message: "Forbidden: this session is bound to another caller; a session can only be used by the caller that created it (send initialize for a session of your own)"}
}

// 401 Unauthorized.
func errUnidentified(err error) *failure {
	return &failure{cause: causeUnidentified, status: http.StatusUnauthorized, code: codeInvalidRequest,
		message: "Unauthorized: the caller could not be identified: " + err.Error()}
}

// 429 Too Many Requests.
func errTooManyCallerSessions(limit int, retry time.Duration) *failure {
	return &failure{cause: causeCallerSessions, status: http.StatusTooManyRequests, code: codeServerError, retryAfter: retry,
		message: fmt.Sprintf("Too Many Requests: this caller already holds its maximum of %d sessions on this server; end one (DELETE) or retry later", limit)}
}

func errTooManySessionRequests(limit int, retry time.Duration) *failure {
	return &failure{cause: causeSessionRequests, status: http.StatusTooManyRequests, code: codeServerError, retryAfter: retry,
		message: fmt.Sprintf("Too Many Requests: this session already has its maximum of %d requests running; retry when one has been answered", limit)}
}

// 404 Not Found: unknown, expired or terminated sessions alike.
func errSessionNotFound() *failure {
	return &failure{cause: causeUnknownSession, status: http.StatusNotFound, code: codeSessionNotFound,
		message: "Session not found"}
}

// errSessionGone answers a request whose session stopped being live while
// it was served: 503 when the server is shutting down, else 404.
func errSessionGone(shutting bool) *failure {
	if shutting {
		return errShuttingDown()
	}
	return errSessionNotFound()
}

// 405 Method Not Allowed.
func errMethodNotAllowed(stateless, noStreaming bool) *failure {
	allow, use := "GET, POST, DELETE", "POST, GET or DELETE"
	switch {
	case stateless:
		allow, use = "POST", "POST"
	case noStreaming:
		allow, use = "POST, DELETE", "POST or DELETE"
	}
	return &failure{cause: causeMethodNotAllowed, status: http.StatusMethodNotAllowed, code: codeInvalidRequest, allow: allow,
		message: "Method Not Allowed: use " + use}
}

func errStreamingDisabled() *failure {
	return &failure{cause: causeMethodNotAllowed, status: http.StatusMethodNotAllowed, code: codeInvalidRequest, allow: "POST, DELETE",
		message: "Method Not Allowed: this server offers no standalone GET stream"}
}

func errCannotStream() *failure {
	return &failure{cause: causeMethodNotAllowed, status: http.StatusMethodNotAllowed, code: codeInvalidRequest, allow: "POST, DELETE",
		message: "Method Not Allowed: this server's response writer cannot stream, so it offers no standalone GET stream"}
}

func errModernMethod() *failure {
	return &failure{cause: causeMethodNotAllowed, status: http.StatusMethodNotAllowed, code: codeInvalidRequest, allow: "POST",
		message: "Method Not Allowed: protocol version 2026-07-28 has no sessions and no standalone stream; use POST"}
}

func errStatelessMethod() *failure {
	return &failure{cause: causeMethodNotAllowed, status: http.StatusMethodNotAllowed, code: codeInvalidRequest, allow: "POST",
		message: "Method Not Allowed: this server is stateless; it has no sessions and no standalone stream"}
}

// 406 Not Acceptable.
func errNotAcceptablePost() *failure {
	return &failure{cause: causeNotAcceptable, status: http.StatusNotAcceptable, code: codeServerError,
		message: "Not Acceptable: Accept must list both application/json and text/event-stream"}
}

func errNotAcceptableGet() *failure {
	return &failure{cause: causeNotAcceptable, status: http.StatusNotAcceptable, code: codeServerError,
		message: "Not Acceptable: Accept must list text/event-stream"}
}

func errUnknownEventID(id string) *failure {
	return &failure{cause: causeUnknownEventID, status: http.StatusBadRequest, code: codeInvalidRequest,
		message: fmt.Sprintf("Bad Request: Last-Event-ID %q names a request's stream that this session's event log does not hold (expired, evicted, another session's, or never issued): it cannot be resumed", clip(id, 80))}
}

// 409 Conflict.
func errTooManyResumes(limit int) *failure {
	return &failure{cause: causeTooManyResumes, status: http.StatusConflict, code: codeServerError,
		message: fmt.Sprintf("Conflict: this session already has %d resumed request streams open", limit)}
}

func errStreamConflict() *failure {
	return &failure{cause: causeConflict, status: http.StatusConflict, code: codeServerError,
		message: "Conflict: Only one SSE stream is allowed per session, and this session's stream is live"}
}

// 408 Request Timeout.
func errBodyTimeout(limit time.Duration) *failure {
	return &failure{cause: causeBodyTimeout, status: http.StatusRequestTimeout, code: codeInvalidRequest,
		message: fmt.Sprintf("Request Timeout: the request body did not arrive within %s", limit)}
}

// errServerReadTimeout is 408 for a body the HTTP server's own read
// deadline (its ReadTimeout, counted from the request's start) ended.
func errServerReadTimeout() *failure {
	return &failure{cause: causeBodyTimeout, status: http.StatusRequestTimeout, code: codeInvalidRequest,
		message: "Request Timeout: the request body did not arrive within the HTTP server's read timeout"}
}

// 413 Content Too Large.
func errBodyTooLarge(limit int64) *failure {
	return &failure{cause: causeBodyTooLarge, status: http.StatusRequestEntityTooLarge, code: codeInvalidRequest,
		message: fmt.Sprintf("Request body exceeds the limit of %d bytes", limit)}
}

// 415 Unsupported Media Type.
func errContentType(got string) *failure {
	return &failure{cause: causeContentType, status: http.StatusUnsupportedMediaType, code: codeInvalidRequest,
		message: fmt.Sprintf("Unsupported Media Type: Content-Type must be application/json, got %q", got)}
}

// 503 Service Unavailable.
func errTooManyListenStreams(limit int, retry time.Duration) *failure {
	return &failure{cause: causeOverloaded, status: http.StatusServiceUnavailable, code: codeServerError, retryAfter: retry,
		message: fmt.Sprintf("Service Unavailable: the server holds its maximum of %d subscriptions/listen streams; retry later", limit)}
}

func errTooManyModernRequests(limit int, retry time.Duration) *failure {
	return &failure{cause: causeOverloaded, status: http.StatusServiceUnavailable, code: codeServerError, retryAfter: retry,
		message: fmt.Sprintf("Service Unavailable: the server is serving its maximum of %d 2026-07-28 requests at once; retry later", limit)}
}

func errTooManySessions(limit int, retry time.Duration) *failure {
	return &failure{cause: causeOverloaded, status: http.StatusServiceUnavailable, code: codeServerError, retryAfter: retry,
		message: fmt.Sprintf("Service Unavailable: the server holds its maximum of %d sessions; retry later", limit)}
}

func errShuttingDown() *failure {
	return &failure{cause: causeShuttingDown, status: http.StatusServiceUnavailable, code: codeServerError, retryAfter: DefaultRetryAfter,
		message: "Service Unavailable: the server is shutting down"}
}

func errStore(err error) *failure {
	return &failure{cause: causeStoreUnavailable, status: http.StatusServiceUnavailable, code: codeServerError, retryAfter: time.Second, storeDown: true,
		message: "Service Unavailable: session store error: " + err.Error()}
}

// 500 Internal Server Error.
func errInternal(detail string) *failure {
	return &failure{cause: causeInternal, status: http.StatusInternalServerError, code: codeServerError,
		message: "Internal error: " + detail}
}

// forRequest sets the id of the request f answers, which its body then
// echoes, and returns f. The one exception is the 404 of a session that is
// gone, which keeps "id": null: a client that finds the request's id in a
// JSON-RPC error takes it for that call's own failure (the Go SDK's client,
// v1.8.0, does, and then never learns that its session is gone and must be
// replaced), while a session-level 404 must read as the session's end.
func (f *failure) forRequest(id json.RawMessage) *failure {
	if f.code == codeSessionNotFound {
		return f
	}
	f.id = id
	return f
}

// writeFailure answers with f's status and JSON-RPC error body, and counts
// the answer (lifeline.http.responses).
func (h *Handler) writeFailure(w http.ResponseWriter, f *failure) {
	h.met.answered(f.cause)
	writeFailure(w, f)
}

// writeFailure answers with f's status and JSON-RPC error body.
func writeFailure(w http.ResponseWriter, f *failure) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if f.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((f.retryAfter+time.Second-1)/time.Second)))
	}
	if f.allow != "" {
		h.Set("Allow", f.allow)
	}
	if f.closeConn {
		h.Set("Connection", "close")
	}
	id := f.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(rpcError{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{Code: f.code, Message: f.message, Data: f.data}})
	body = append(body, '\n')
	// Sized, so that an answer sent before the handler returns
	// (bodydrain.DropUnread) is whole when it is sent.
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
}

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
