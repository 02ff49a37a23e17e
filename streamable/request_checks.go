package streamable

import (
	"mime"
	"net/http"
	"strings"
)

// supportedVersion reports whether this transport serves protocol version v.
func supportedVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return true
	}
	return false
}

const supportedVersionList = "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"

// checkProtocolVersion rejects an MCP-Protocol-Version header naming a
// version this transport does not serve. A missing header means 2025-03-26.
func checkProtocolVersion(r *http.Request) *failure {
	v := r.Header.Get(headerProtocolVersion)
	if v == "" || supportedVersion(v) {
		return nil
	}
	return errUnsupportedVersion(v)
}

// accepts reports whether the Accept header lists mediaType (or a wildcard
// covering it).
func accepts(r *http.Request, mediaType string) bool {
	major, _, _ := strings.Cut(mediaType, "/")
	for _, line := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(line, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if mt == mediaType || mt == "*/*" || mt == major+"/*" {
				return true
			}
		}
	}
	return false
}

// isJSONContent reports whether the request's Content-Type is application/json.
func isJSONContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
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
