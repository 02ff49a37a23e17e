package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// EventLog records the messages a transport sends on a session's SSE
// streams, so that a client whose stream broke can resume it (GET with
// Last-Event-ID) and be sent what it missed. Its method set is exactly that
// of mcp-go's server.EventStore: every EventLog is a server.EventStore and
// every server.EventStore is an EventLog.
//
// The guarantees of the implementations here (MemoryEventLog,
// redisstore.EventLog):
//
//   - An event id is opaque, non-empty, has no CR or LF, is unique within
//     its session across all the session's streams, and names its stream:
//     ReplayEventsAfter finds the stream from the id alone.
//   - ReplayEventsAfter sends, once each and in the order they were stored,
//     the events of the id's stream stored after it, and returns the
//     stream's id. Ids of another session, ids dropped by a bound or by
//     expiry, purged ids and ids that were never issued wrap
//     ErrUnknownEventID.
//   - The log is bounded per stream and per session (EventLogOptions), the
//     oldest event dropped first, and a session's events lapse TTL after
//     its last StoreEvent.
//   - Concurrent StoreEvent calls on one stream get ids in the order the
//     events are kept: a replay sends them in that order.
type EventLog interface {
	// StoreEvent records message as the next event of the session's stream
	// streamID and returns its id. It does not keep message: it stores a
	// copy.
	StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error)
	// ReplayEventsAfter calls send, in the order they were stored, for
	// every event stored after lastEventID on the stream of lastEventID,
	// and returns that stream's id. It returns an error wrapping
	// ErrUnknownEventID if lastEventID is not an event of the session that
	// is still kept, and the error of send if send fails. send must not
	// modify the message.
	ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error)
	// PurgeSession removes every event of the session: afterwards none of
	// its ids can be replayed. Purging an unknown session is not an error.
	PurgeSession(ctx context.Context, sessionID string) error
}

// EventBatchLog is an EventLog that can record several events of one
// stream in one call: for a log kept in another process, one round trip
// instead of one per event. A transport uses it, when its log has it, for
// the messages it writes to a stream together (a response's priming event
// and first messages, a burst of notifications). redisstore.EventLog
// implements it.
type EventBatchLog interface {
	EventLog
	// StoreEvents records messages, in order, as the next events of the
	// session's stream streamID, and returns their ids in that order:
	// what as many StoreEvent calls in a row would record and return,
	// bounds included. It records all of them or, when it returns an
	// error, none; a message larger than the log's byte bound fails the
	// whole call with an error wrapping ErrEventTooLarge. It does not keep
	// messages.
	StoreEvents(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) ([]string, error)
}

// ErrUnknownEventID is mcp-go's server.ErrUnknownEventID, the error that
// ReplayEventsAfter wraps for an id it cannot replay after; mcp-go's
// transport answers it with 400. It is the same value, so errors.Is
// matches either name.
var ErrUnknownEventID = server.ErrUnknownEventID

// ErrEventTooLarge is returned by StoreEvent for a message larger than the
// log's per-stream or per-session byte bound: it is not stored (a
// transport sends it without an id, so it cannot be resumed from).
var ErrEventTooLarge = errors.New("sessionstore: event larger than the event log's byte bound")

// Defaults of EventLogOptions.
const (
	// DefaultEventTTL matches the transport's default session idle TTL:
	// a session's events live as long as an idle session does.
	DefaultEventTTL = 30 * time.Minute
	// DefaultMaxStreamEvents and DefaultMaxStreamBytes bound one stream: a
	// POST stream carries a response and its progress notifications, and
	// a listening stream's client that stays away longer than a thousand
	// events or 4 MiB (the default request body bound, so one large tool
	// result fits) is better told to start over.
	DefaultMaxStreamEvents = 1000
	DefaultMaxStreamBytes  = 4 << 20
	// DefaultMaxSessionEvents and DefaultMaxSessionBytes bound one
	// session's streams together: ten streams full, or four at the byte
	// bound.
	DefaultMaxSessionEvents = 10000
	DefaultMaxSessionBytes  = 16 << 20
)

// EventLogOptions bound an event log. The zero value gives the defaults;
// a field <= 0 takes its default. A message's size is its length in bytes.
type EventLogOptions struct {
	// TTL is how long a session's events are kept after its last
	// StoreEvent (DefaultEventTTL). A transport also purges a session's
	// events when the session ends.
	TTL time.Duration
	// MaxStreamEvents and MaxStreamBytes bound one stream's events
	// (DefaultMaxStreamEvents, DefaultMaxStreamBytes): past either, the
	// stream's oldest events are dropped.
	MaxStreamEvents int
	MaxStreamBytes  int
	// MaxSessionEvents and MaxSessionBytes bound the events of all of one
	// session's streams (DefaultMaxSessionEvents, DefaultMaxSessionBytes):
	// past either, the session's oldest events, whatever their stream, are
	// dropped.
	MaxSessionEvents int
	MaxSessionBytes  int
}

// WithDefaults returns o with every field <= 0 set to its default.
func (o EventLogOptions) WithDefaults() EventLogOptions {
	if o.TTL <= 0 {
		o.TTL = DefaultEventTTL
	}
	if o.MaxStreamEvents <= 0 {
		o.MaxStreamEvents = DefaultMaxStreamEvents
	}
	if o.MaxStreamBytes <= 0 {
		o.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if o.MaxSessionEvents <= 0 {
		o.MaxSessionEvents = DefaultMaxSessionEvents
	}
	if o.MaxSessionBytes <= 0 {
		o.MaxSessionBytes = DefaultMaxSessionBytes
	}
	return o
}

// MaxEventBytes is the size of the largest message the log stores: the
// smaller of the two byte bounds.
func (o EventLogOptions) MaxEventBytes() int {
	o = o.WithDefaults()
	return min(o.MaxStreamBytes, o.MaxSessionBytes)
}

// EventLogProvider is implemented by a shared Store that can keep an event
// log every replica sharing it reads: a stream one replica logged can be
// resumed on any other. redisstore.Store implements it. A transport given
// such a Store and no event log uses the Store's, so that resumability
// works across replicas without being wired.
type EventLogProvider interface {
	// NewEventLog returns an event log kept where the Store keeps its
	// records, bounded by opts (fields <= 0 take their defaults). The log
	// lives as long as the Store; it needs no closing of its own.
	NewEventLog(opts EventLogOptions) EventLog
}
