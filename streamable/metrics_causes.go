package streamable

import "net/http"

// answerCause names why the transport answered a request as it did: the
// lifeline.cause attribute of lifeline.http.responses. Each cause has one
// HTTP status (causes), so the metric's attribute sets are a fixed,
// precomputed table. Every failure constructor of status.go sets one.
type answerCause uint8

const (
	causeNone answerCause = iota // not recorded (a zero failure)

	// 200, 202, 204: answers that succeeded.
	causeOK        // 200, a JSON answer (a JSON-RPC error of the call included)
	causeStream    // 200, an SSE stream opened
	causeDeleted   // 200, DELETE ended the session
	causeAccepted  // 202, a notification or response taken
	causePreflight // 204, a CORS preflight

	// 400 Bad Request.
	causeMissingSessionID
	causeInitializeWithSession
	causeParseError
	causeInvalidMessage
	causeUnsupportedVersion
	causeBatchVersion
	causeUnknownResponseID
	causeUnknownEventID
	causeModernInvalid // a 2026-07-28 request the client must change (its header, _meta, version, shape)

	causeUnidentified    // 401, Config.Identify failed
	causeForbiddenHost   // 403
	causeForbiddenOrigin // 403
	causeCallerMismatch  // 403, a session bound to another caller

	causeUnknownSession   // 404
	causeModernNotFound   // 404, a 2026-07-28 request for an unknown method
	causeMethodNotAllowed // 405 (streaming disabled, stateless, 2026-07-28 included)
	causeNotAcceptable    // 406
	causeBodyTimeout      // 408
	causeConflict         // 409, the session's stream is live
	causeTooManyResumes   // 409
	causeBodyTooLarge     // 413
	causeContentType      // 415
	causeCallerSessions   // 429, MaxSessionsPerCaller reached
	causeSessionRequests  // 429, MaxRequestsPerSession reached
	causeInternal         // 500

	// 503 Service Unavailable.
	causeOverloaded // MaxSessions, MaxListenStreams or the 2026-07-28 request bound reached
	causeShuttingDown
	causeStoreUnavailable

	numCauses
)

// causes gives each answerCause its token and status.
var causes = [numCauses]struct {
	token  string
	status int
}{
	causeOK:                    {"ok", http.StatusOK},
	causeStream:                {"stream", http.StatusOK},
	causeDeleted:               {"deleted", http.StatusOK},
	causeAccepted:              {"accepted", http.StatusAccepted},
	causePreflight:             {"preflight", http.StatusNoContent},
	causeMissingSessionID:      {"missing_session_id", http.StatusBadRequest},
	causeInitializeWithSession: {"initialize_with_session", http.StatusBadRequest},
	causeParseError:            {"parse_error", http.StatusBadRequest},
	causeInvalidMessage:        {"invalid_message", http.StatusBadRequest},
	causeUnsupportedVersion:    {"unsupported_version", http.StatusBadRequest},
	causeBatchVersion:          {"batch_version", http.StatusBadRequest},
	causeUnknownResponseID:     {"unknown_response_id", http.StatusBadRequest},
	causeUnknownEventID:        {"unknown_event_id", http.StatusBadRequest},
	causeModernInvalid:         {"modern_invalid", http.StatusBadRequest},
	causeUnidentified:          {"unidentified", http.StatusUnauthorized},
	causeForbiddenHost:         {"forbidden_host", http.StatusForbidden},
	causeCallerMismatch:        {"caller_mismatch", http.StatusForbidden},
	causeForbiddenOrigin:       {"forbidden_origin", http.StatusForbidden},
	causeUnknownSession:        {"unknown_session", http.StatusNotFound},
	causeModernNotFound:        {"method_not_found", http.StatusNotFound},
	causeMethodNotAllowed:      {"method_not_allowed", http.StatusMethodNotAllowed},
	causeNotAcceptable:         {"not_acceptable", http.StatusNotAcceptable},
	causeBodyTimeout:           {"body_timeout", http.StatusRequestTimeout},
	causeConflict:              {"conflict", http.StatusConflict},
	causeTooManyResumes:        {"too_many_resumes", http.StatusConflict},
	causeBodyTooLarge:          {"body_too_large", http.StatusRequestEntityTooLarge},
	causeContentType:           {"content_type", http.StatusUnsupportedMediaType},
	causeCallerSessions:        {"too_many_caller_sessions", http.StatusTooManyRequests},
	causeSessionRequests:       {"too_many_session_requests", http.StatusTooManyRequests},
	causeInternal:              {"internal", http.StatusInternalServerError},
	causeOverloaded:            {"overloaded", http.StatusServiceUnavailable},
	causeShuttingDown:          {"shutting_down", http.StatusServiceUnavailable},
	causeStoreUnavailable:      {"store_unavailable", http.StatusServiceUnavailable},
}

// modernCause is the cause of a 2026-07-28 answer with status (see
// modernErrorStatus).
func modernCause(status int) answerCause {
	switch status {
	case http.StatusNotFound:
		return causeModernNotFound
	case http.StatusBadRequest:
		return causeModernInvalid
	default:
		return causeOK
	}
}
