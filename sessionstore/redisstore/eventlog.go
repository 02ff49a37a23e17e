package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// EventLog is a sessionstore.EventLog on Redis lists, under its Store's
// prefix: a client can resume, on any replica whose Store shares the Redis
// and prefix, a stream that another replica logged. Make one with
// Store.EventLog. It is safe for concurrent use.
//
// Each call is one Lua script, so each is atomic: concurrent StoreEvent
// calls on one stream get ids in the order the events are kept, and a
// replay sees a consistent log. StoreEvents (sessionstore.EventBatchLog)
// stores several messages of one stream in one script: one round trip.
// Stores made at once share round trips (eval_shared.go): one goes out on
// its own, and the ones made while it is in flight go out together, once
// it was answered, as pipelines (one per store of the busiest stream among
// them), each still a script of its own; a store whose caller gave up
// before its pipeline went out is not sent. So a Store has one round trip
// of stores in flight at a time, and one that Redis does not answer holds
// the stores made meanwhile until it times out. StoreStream's stores
// (their callers wrote what they record already) share round trips of
// their own, one in flight at a time beside those: until Close, none goes
// out alone, and each batch waits a millisecond for more before it goes. Calls are bounded by the
// Store's OpTimeout (a batched store, from its call), and one that fails
// because Redis is unreachable or not ready wraps ErrUnavailable. Times
// are the Redis server's.
//
// # Layout
//
// A session's events are under the base key P+"eventlog:"+len(id)+":"+id
// (the length keeps any session id apart from the suffixes): a hash
// (suffix ":m") with the log's tag, counters and the number of each
// stream, a sorted set (":h") of the streams holding events scored by
// their oldest event, and one Redis list per MCP stream (":"+number),
// whose elements are the events, each its sequence number S, a space and
// the message. An event id is tag-N-S: the log's random tag (a new one
// after a purge or expiry, so ids of another session or of an earlier log
// of the same session are unknown), the stream's number N and the event's
// sequence number S within the session. A stream stored whole by
// StoreStream is stored as by StoreEvents, with a nonce ending in "~",
// and its ids are its places (sessionstore.StreamEventID, stream~k): a
// replay finds the stream by its id and event k's sequence number as the
// first of the stream's last store plus k (its events have consecutive
// ones), from the hash field that records that store for retries; so the
// ids are known before the store, and stay as unknown as a tag-N-S id
// would once a bound, an expiry or a purge dropped the events, or once
// another store to the stream replaced that record. A short stream, a POST
// response's, costs Redis what it holds and about 500 bytes more, its hash
// fields and keys included (a Redis stream, which an earlier layout under
// P+"events:" used, costs about 4.5 KB however few its entries). A replay
// reads its stream's list from the newest event back, in reads that
// double from 64 elements, so it reads at most twice what it returns plus
// 64 (the whole stream for an id older than the stream's first event).
// Replicas running that earlier layout and this one keep separate logs: a
// stream one recorded is not resumable on the other (its ids are unknown
// there, and the client starts the request over), so streams open across
// a deploy that changes the layout are not carried over.
//
// # Bounds
//
// StoreEvent enforces every bound in the same script, exactly: after the
// RPUSH it drops the stream's oldest events while the stream is past its
// event or byte bound, then the session's oldest (the stream first in the
// sorted set, whose head is the session's oldest event) while the session
// is past its own; the hash keeps each stream's and the session's counts
// and bytes. StoreEvents keeps what that many StoreEvent calls would: it
// enforces the stream's bounds after each message, and the session's once
// after the last (and before a message that takes its stream past the
// stream's bound), which drops the same events. A drop takes as many of a
// stream's oldest events as an event bound needs in one read of the list,
// up to the next stream's head: a session at its bound whose oldest stream
// is a POST response's drops it whole at once. (A call that finds keys
// evicted enforces the session's bounds after each message: see Retries
// and evictions.) A stream left empty is
// deleted, with its hash fields, so the hash holds five fields per stream
// holding events.
//
// # Expiry
//
// The hash and the sorted set expire the TTL after the session's last
// StoreEvent, and with them every id. A stream key gets the TTL plus a
// quarter of it when stored to, and all of the session's stream keys get
// it again once a quarter of the TTL has passed since they last did: so
// they outlive the hash, by at most a quarter of the TTL, at the cost of
// one PEXPIRE per stream once per quarter TTL. PurgeSession deletes every
// key of the session; after an expiry, the stream keys lapse by
// themselves.
//
// # Retries and evictions
//
// go-redis may repeat a call whose connection broke: StoreEvent passes a
// random nonce, and a call that repeats the stream's last one stores
// nothing and answers the same id. go-redis resends a whole pipeline, so
// no pipeline carries two stores of one stream. A Redis whose maxmemory
// policy evicts keys can drop events before their bounds or TTL do;
// replaying after them answers ErrUnknownEventID, and the log forgets a
// stream whose key it finds gone when a bound's drop reaches it (until
// then its lost events still count towards the session's bounds). A
// StoreEvents that finds its stream's key or the set of stream heads
// evicted enforces the session's bounds after each of its messages, as
// StoreEvent calls would, so that the counts of lost events cost it what
// they would cost them. Run Redis with noeviction (or accept that).
type EventLog struct {
	s       *Store
	opts    sessionstore.EventLogOptions
	scripts eventScripts
}

var _ sessionstore.EventLog = (*EventLog)(nil)

// EventLog returns an event log on the Store's client and prefix, bounded
// by opts (zero fields take their defaults).
func (s *Store) EventLog(opts sessionstore.EventLogOptions) *EventLog {
	return &EventLog{s: s, opts: opts.WithDefaults(), scripts: newEventScripts()}
}

var _ sessionstore.EventLogProvider = (*Store)(nil)

// NewEventLog implements sessionstore.EventLogProvider: it is EventLog,
// returned as a sessionstore.EventLog.
func (s *Store) NewEventLog(opts sessionstore.EventLogOptions) sessionstore.EventLog {
	return s.EventLog(opts)
}

// tagLen is the length of a log's tag: 60 random bits, base32, the start
// of the nonce (rand.Text) of the StoreEvent that made the log.
const tagLen = 12

// base is the prefix of the keys of a session's log.
func (l *EventLog) base(sessionID string) string {
	return l.s.opts.Prefix + "eventlog:" + strconv.Itoa(len(sessionID)) + ":" + sessionID
}

// StoreEvent implements sessionstore.EventLog. It refuses a message over
// EventLogOptions.MaxEventBytes with sessionstore.ErrEventTooLarge.
func (l *EventLog) StoreEvent(ctx context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	ids, err := l.StoreEvents(ctx, sessionID, streamID, []json.RawMessage{message})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

var _ sessionstore.EventBatchLog = (*EventLog)(nil)

// StoreEvents implements sessionstore.EventBatchLog: messages go in one
// script, one round trip to Redis however many there are. It refuses the
// whole call with sessionstore.ErrEventTooLarge when a message is over
// EventLogOptions.MaxEventBytes.
func (l *EventLog) StoreEvents(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) ([]string, error) {
	if err := l.checkStore(sessionID, streamID, messages); err != nil || len(messages) == 0 {
		return nil, err
	}
	return l.store(ctx, l.s.evalShared, sessionID, streamID, messages, rand.Text())
}

// checkStore refuses a store of messages that the log cannot take.
func (l *EventLog) checkStore(sessionID, streamID string, messages []json.RawMessage) error {
	const op = "store events"
	if sessionID == "" || streamID == "" {
		return fmt.Errorf("redisstore: %s: empty session or stream id", op)
	}
	maxSize := l.opts.MaxEventBytes()
	for _, m := range messages {
		if len(m) > maxSize {
			return fmt.Errorf("redisstore: %s: one of %d bytes (at most %d): %w", op, len(m), maxSize, sessionstore.ErrEventTooLarge)
		}
	}
	return nil
}

var _ sessionstore.EventStreamLog = (*EventLog)(nil)

// StoreStream implements sessionstore.EventStreamLog: StoreEvents, in one
// script, with a nonce that marks the stream's record as a whole stream's
// (its ids positional: ReplayEventsAfter reads event k of it as the
// stream's first sequence number plus k), and a message over
// EventLogOptions.MaxEventBytes stored empty.
func (l *EventLog) StoreStream(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	// A message over the byte bound goes empty, in its place (the
	// caller's slice is not changed).
	maxSize, copied := l.opts.MaxEventBytes(), false
	for i, m := range messages {
		if len(m) > maxSize {
			if !copied {
				messages, copied = append([]json.RawMessage(nil), messages...), true
			}
			messages[i] = nil
		}
	}
	if err := l.checkStore(sessionID, streamID, messages); err != nil {
		return err
	}
	_, err := l.store(ctx, l.s.evalBehind, sessionID, streamID, messages, rand.Text()+wholeNonceMark)
	return err
}

// wholeNonceMark ends the nonce of a StoreStream call, which the record of
// the stream's last store keeps (luaEventReplayWhole). The store script
// answers such a call, and records it, with the first message's id alone.
const wholeNonceMark = "~"

// store is StoreEvents with the call's nonce, which a retry of the call
// repeats, sent by eval (evalShared, or StoreStream's evalBehind). It
// answers every message's id, or the first message's alone for a nonce
// ending in wholeNonceMark, as the script does.
func (l *EventLog) store(ctx context.Context, eval func(context.Context, scriptCall) ([]any, error),
	sessionID, streamID string, messages []json.RawMessage, nonce string) ([]string, error) {
	const op = "store events"
	res, err := eval(ctx, l.storeCall(sessionID, streamID, messages, nonce))
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	if _, err := eventStatus(op, res); err != nil {
		return nil, err
	}
	wantIDs := len(messages)
	if strings.HasSuffix(nonce, wholeNonceMark) {
		wantIDs = 1
	}
	if len(res) != 1+wantIDs {
		return nil, fmt.Errorf("redisstore: %s: %d ids for %d messages, want %d", op, len(res)-1, len(messages), wantIDs)
	}
	ids := make([]string, wantIDs)
	for i := range ids {
		if ids[i], err = field[string](op, res, 1+i); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// storeCall is the store script's run that stores messages on the
// session's stream streamID, with the call's nonce.
func (l *EventLog) storeCall(sessionID, streamID string, messages []json.RawMessage, nonce string) scriptCall {
	ttl := ms(l.opts.TTL)
	base := l.base(sessionID)
	args := make([]any, 0, 9+len(messages))
	args = append(args, base, streamID, nonce, ttl, max(ttl/4, 1),
		l.opts.MaxStreamEvents, l.opts.MaxStreamBytes, l.opts.MaxSessionEvents, l.opts.MaxSessionBytes)
	for _, m := range messages {
		args = append(args, []byte(m))
	}
	return scriptCall{script: l.scripts.store, keys: []string{base + ":m", base + ":h"}, args: args, once: base + " " + streamID}
}

// ReplayEventsAfter implements sessionstore.EventLog. It reads the events
// to send in one call to Redis (at most a stream's bound of them) and
// calls send after it.
func (l *EventLog) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	const op = "replay events"
	base := l.base(sessionID)
	var res []any
	var err error
	// eventID is the id of the element whose sequence number is seq.
	var eventID func(seq string) (string, error)
	if stream, k, ok := sessionstore.ParseStreamEventID(lastEventID); ok {
		res, err = l.s.eval(ctx, l.scripts.replayWhole, []string{base + ":m"}, base, stream, k)
		eventID = func(seq string) (string, error) {
			first, err := field[string](op, res, 3)
			if err != nil || !decimal(first) {
				return "", fmt.Errorf("redisstore: %s: malformed first sequence number %.40q: %v", op, first, err)
			}
			s, _ := strconv.ParseInt(seq, 10, 64)
			f, _ := strconv.ParseInt(first, 10, 64)
			if s < f {
				return "", fmt.Errorf("redisstore: %s: element %s before its stream's first, %s", op, seq, first)
			}
			return sessionstore.StreamEventID(stream, int(s-f)), nil
		}
	} else if tag, num, seq, ok := parseEventID(lastEventID); ok {
		res, err = l.s.eval(ctx, l.scripts.replay, []string{base + ":m"}, base, tag, num, seq)
		prefix := tag + "-" + num + "-"
		eventID = func(seq string) (string, error) { return prefix + seq, nil }
	} else {
		return "", unknownEvent(lastEventID)
	}
	if err != nil {
		return "", fail(ctx, op, err)
	}
	if st, _ := field[string](op, res, 0); st == "ABSENT" {
		return "", fmt.Errorf("redisstore: replay events after %q: %w: %w", lastEventID, sessionstore.ErrUnknownEventID, sessionstore.ErrStreamNotStored)
	}
	known, err := eventStatus(op, res)
	if err != nil {
		return "", err
	}
	if !known {
		return "", unknownEvent(lastEventID)
	}
	stream, err := field[string](op, res, 1)
	if err != nil {
		return "", err
	}
	entries, err := field[[]any](op, res, 2)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		seq, msg, err := entry(op, e)
		if err != nil {
			return "", err
		}
		id, err := eventID(seq)
		if err != nil {
			return "", err
		}
		if err := send(id, json.RawMessage(msg)); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession implements sessionstore.EventLog.
func (l *EventLog) PurgeSession(ctx context.Context, sessionID string) error {
	const op = "purge a session's events"
	base := l.base(sessionID)
	if _, err := l.s.eval(ctx, l.scripts.purge, []string{base + ":m", base + ":h"}, base); err != nil {
		return fail(ctx, op, err)
	}
	return nil
}

// eventStatus reads the status of an event script: known is false for
// UNKNOWN.
func eventStatus(op string, res []any) (known bool, err error) {
	st, err := field[string](op, res, 0)
	switch {
	case err != nil:
		return false, err
	case st == statusOK:
		return true, nil
	case st == "UNKNOWN":
		return false, nil
	}
	return false, fmt.Errorf("redisstore: %s: unexpected script status %q", op, st)
}

// entry reads one element of a stream's list, S+" "+message, as S and
// message.
func entry(op string, e any) (seq, msg string, err error) {
	if el, ok := e.(string); ok {
		if seq, msg, ok = strings.Cut(el, " "); ok && decimal(seq) {
			return seq, msg, nil
		}
	}
	return "", "", fmt.Errorf("redisstore: %s: malformed stream element %.40q", op, e)
}

// parseEventID splits an id of this log into its tag, stream number and
// sequence number; ok is false for anything else, which is then never
// sent to Redis.
func parseEventID(id string) (tag, num, seq string, ok bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 || len(parts[0]) != tagLen || !decimal(parts[1]) || !decimal(parts[2]) {
		return "", "", "", false
	}
	for _, c := range []byte(parts[0]) {
		if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return "", "", "", false
		}
	}
	return parts[0], parts[1], parts[2], true
}

// decimal reports whether s is a positive integer as the scripts write
// it: digits, no leading zero, at most 15 of them (Lua's numbers are exact
// to 2^53).
func decimal(s string) bool {
	if s == "" || len(s) > 15 || s[0] == '0' {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func unknownEvent(id string) error {
	return fmt.Errorf("redisstore: replay events after %q: %w", id, sessionstore.ErrUnknownEventID)
}
