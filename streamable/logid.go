package streamable

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// logID is how a session is named in logs. A session id is the only
// credential a client holds for its session, so it is never logged:
// lines name the session by the first 12 hex digits of the id's SHA-256
// instead, enough to tell one session's lines from another's, and an
// operator who holds an id can compute its name (sha256sum). The digest is
// computed only if the line is written.
type logID string

// LogValue implements slog.LogValuer.
func (id logID) LogValue() slog.Value {
	sum := sha256.Sum256([]byte(id))
	return slog.StringValue(hex.EncodeToString(sum[:6]))
}
