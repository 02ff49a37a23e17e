package streamable

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Event ids on the wire. The id of every SSE event lifeline writes is
//
//	<stream>/<log id>
//
// where <log id> is the id the event log gave the message (opaque to the
// transport) and <stream> names the session stream it belongs to: "get"
// for the standalone GET stream, "p<16 hex digits>[-<request id>]" for one
// POST's response stream, the request's JSON-RPC id Base64url-encoded
// when it is short (maxStreamRequestID). So a GET with Last-Event-ID is
// routed by the id alone (resume.go: the standalone stream, with its
// one-stream rule; resume_post.go: the rest of one request's stream,
// beside it), whatever log is configured, and a POST stream's resumer can
// answer for a request whose replica died without a word.

// eventIDSep separates an SSE event id's stream from its log id. Stream
// names never contain it; log ids may.
const eventIDSep = "/"

// maxStreamRequestID bounds the JSON of a request id carried in its POST
// stream's name: longer ids are left out (the stream is still resumable;
// only a lost request cannot be answered by id).
const maxStreamRequestID = 96

// postStreamPrefix starts the name of every POST response stream.
const postStreamPrefix = "p"

// wireEventID returns the SSE id of the event the log stored as logID on
// stream.
func wireEventID(stream, logID string) string { return stream + eventIDSep + logID }

// splitEventID splits an SSE id this transport wrote into its stream and
// log id; ok is false for anything else.
func splitEventID(id string) (stream, logID string, ok bool) {
	stream, logID, ok = strings.Cut(id, eventIDSep)
	if !ok || logID == "" || !validStreamName(stream) {
		return "", "", false
	}
	return stream, logID, true
}

func validStreamName(s string) bool {
	return s == getStreamID || isPostStream(s)
}

// isPostStream reports whether s names a POST response stream.
func isPostStream(s string) bool {
	if len(s) < len(postStreamPrefix)+16 || !strings.HasPrefix(s, postStreamPrefix) {
		return false
	}
	if _, err := hex.DecodeString(s[len(postStreamPrefix) : len(postStreamPrefix)+16]); err != nil {
		return false
	}
	rest := s[len(postStreamPrefix)+16:]
	return rest == "" || (rest[0] == '-' && len(rest) > 1)
}

// newPostStreamName names a new POST response stream of the request id:
// unique within its session (64 random bits), carrying the id when short.
func newPostStreamName(id json.RawMessage) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := postStreamPrefix + hex.EncodeToString(b[:])
	if len(id) > 0 && len(id) <= maxStreamRequestID {
		name += "-" + base64.RawURLEncoding.EncodeToString(id)
	}
	return name
}

// streamRequestID returns the request id a POST stream's name carries, or
// nil.
func streamRequestID(stream string) json.RawMessage {
	_, enc, ok := strings.Cut(stream, "-")
	if !ok {
		return nil
	}
	id, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !json.Valid(id) {
		return nil
	}
	return id
}

// isFinalResponse reports whether msg, a message of a POST stream, is the
// request's answer (a JSON-RPC response: no method), after which the
// stream ends.
func isFinalResponse(msg []byte) bool {
	var m struct {
		Method *string          `json:"method"`
		ID     *json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	return m.Method == nil && m.ID != nil
}

// clip shortens s to at most n bytes for an error message, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
