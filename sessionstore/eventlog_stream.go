package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// EventStreamLog is an EventBatchLog that can record a whole stream under
// ids its caller knows before the record lands (StreamEventID): a
// transport can then write a stream's events first and record them after,
// and a log in another process costs the response no round trip. A
// transport uses it for a POST response it writes whole (its priming
// event, notifications and answer, at once). redisstore.EventLog
// implements it.
type EventStreamLog interface {
	EventBatchLog
	// StoreStream records messages, in order, as the events of the
	// session's stream streamID, which holds no events and takes no more
	// after them: message k gets the id StreamEventID(streamID, k), and
	// ReplayEventsAfter takes those ids as it takes any other, sending
	// what follows one under such ids too. Bounds and errors are
	// StoreEvents', except that a message larger than the log's byte
	// bound is recorded empty, in its place (a replay sends it as an
	// event with no data): it records all of messages or none, and those
	// the bounds drop are unknown ids afterwards. An id of the stream is
	// unknown until the call returns nil, and unknown, as far as the
	// caller can tell, when it fails (a log in another process may still
	// have stored what it was sent: a failure is not a rollback). While
	// the log holds nothing of the stream, ReplayEventsAfter's error for
	// its ids wraps ErrStreamNotStored as well as ErrUnknownEventID.
	StoreStream(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) error
}

// ErrStreamNotStored is wrapped, with ErrUnknownEventID, by an
// EventStreamLog's ReplayEventsAfter for an id of StreamEventID's form
// whose stream the log holds nothing of: not stored yet (its StoreStream
// call has not landed), never stored, or gone whole (a bound, expiry, a
// purge). An id of a stream the log holds that it cannot replay after (a
// bound dropped the event) wraps ErrUnknownEventID alone: a transport may
// wait a while for a stream not stored yet, never for such an id.
var ErrStreamNotStored = errors.New("sessionstore: the log holds nothing of the event id's stream")

// streamEventSep separates a stream's id from an event's place in it in
// the ids of StoreStream.
const streamEventSep = "~"

// StreamEventID is the id EventStreamLog.StoreStream gives message k
// (from 0) of the stream streamID: streamID, "~" and k in decimal.
func StreamEventID(streamID string, k int) string {
	return streamID + streamEventSep + strconv.Itoa(k)
}

// ParseStreamEventID splits an id that StreamEventID made into its stream
// and place; ok is false for any other id (k has no sign or leading zero,
// and at most 9 digits).
func ParseStreamEventID(id string) (streamID string, k int, ok bool) {
	i := strings.LastIndex(id, streamEventSep)
	if i <= 0 {
		return "", 0, false
	}
	digits := id[i+len(streamEventSep):]
	if digits == "" || len(digits) > 9 || (digits[0] == '0' && len(digits) > 1) {
		return "", 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	k, _ = strconv.Atoi(digits)
	return id[:i], k, true
}
