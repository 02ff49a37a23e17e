package streamable

import (
	"net/http"
	"strings"
)

// headerValue is r.Header.Get for a key already in canonical form, without
// canonicalizing it again on every request.
func headerValue(h http.Header, canonicalKey string) string {
	if v := h[canonicalKey]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// acceptsPostAnswers reports whether the Accept header lists both media
// types a POST may be answered with, application/json and
// text/event-stream, as accepts reads them; the header every MCP client
// sends is recognised at once.
func acceptsPostAnswers(r *http.Request) bool {
	if v := r.Header["Accept"]; len(v) == 1 && v[0] == "application/json, text/event-stream" {
		return true
	}
	return accepts(r, "application/json") && accepts(r, "text/event-stream")
}

// accepts reports whether the Accept header lists mediaType (or a wildcard
// covering it). Media types compare case-insensitively; parameters (q=...)
// are ignored.
func accepts(r *http.Request, mediaType string) bool {
	major, _, _ := strings.Cut(mediaType, "/")
	for _, line := range r.Header["Accept"] {
		for part := range strings.SplitSeq(line, ",") {
			mt := bareMediaType(part)
			if strings.EqualFold(mt, mediaType) || mt == "*/*" {
				return true
			}
			if m, sub, ok := strings.Cut(mt, "/"); ok && sub == "*" && strings.EqualFold(m, major) {
				return true
			}
		}
	}
	return false
}

// isJSONContent reports whether the request's Content-Type is application/json.
func isJSONContent(r *http.Request) bool {
	return strings.EqualFold(bareMediaType(headerValue(r.Header, "Content-Type")), "application/json")
}

// bareMediaType is a media type without its parameters or surrounding
// space.
func bareMediaType(v string) string {
	mt, _, _ := strings.Cut(v, ";")
	return strings.TrimSpace(mt)
}

// visibleASCII reports whether id is non-empty and only 0x21-0x7E, as the
// specification requires of session ids.
func visibleASCII(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7E {
			return false
		}
	}
	return true
}
