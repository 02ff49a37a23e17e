package streamable

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Replicas. When Config.Store is shared (anything but *sessionstore.Memory),
// several Handlers in several processes serve the same sessions, and any of
// them may get any request:
//
//   - a replica that gets a request for a session it does not hold adopts it
//     from the store's record (adopt.go);
//   - a message for the GET stream made on a replica that does not hold the
//     stream is pumped to the stream that holds the lease, on the bus topic
//     named after it (pump.go); a publication nobody received is retried;
//   - a client's response to a server-to-client request, POSTed to a replica
//     that did not send the request, is published on the bus, where the
//     waiting request (or the stream, for a ping) picks it up;
//   - a GET that finds the stream held elsewhere asks the holder over the bus
//     to probe its client, and takes over once the holder lets go;
//   - DELETE terminates the record, which the store broadcasts: the holder
//     closes its stream and every replica answers 404 from then on.

// Bus frames: the first byte of a message published on a session's bus says
// what it is.
const (
	// frameReply + a client's JSON-RPC response POSTed to another replica.
	frameReply = 'r'
	// frameProbe + the prober's holder name: a GET on another replica asks
	// the holder to check its client at once.
	frameProbe = 'p'
	// frameAlive: the holder's client answered a probe.
	frameAlive = 'a'
)

// errEndedElsewhere is the cause of the local end of a session that another
// replica terminated, or that expired in the store.
var errEndedElsewhere = errors.New("session ended on another replica or expired")

// errExpiredInStore is errEndedElsewhere for the copy on the replica that
// created the session, when the store found the record expired (not
// terminated): that replica counts the end as an expiry (metrics), the
// others' copies as ended elsewhere, so a session that expires is counted
// once as expired across the replicas.
var errExpiredInStore = errors.New("session expired in the shared store after its idle TTL")

// isShared reports whether store is shared between processes. Memory is
// the one store known to be process-local; any other is taken as shared.
func isShared(store sessionstore.Store) bool {
	_, local := store.(*sessionstore.Memory)
	return !local
}

// callIDBase is where a replica's server-to-client request ids start: a
// random 28-bit tag above 2^24, so that two replicas issuing requests on
// one session never use the same id, and every id stays below 2^53
// (exact in JavaScript clients).
func callIDBase() int64 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	tag := int64(binary.BigEndian.Uint32(b[:])>>4) | 1
	return tag << 24
}

// frame builds a bus message of kind k.
func frame(k byte, payload []byte) []byte {
	b := make([]byte, 0, 1+len(payload))
	return append(append(b, k), payload...)
}

// isLocalHolder reports whether a lease holder is one of this handler's
// streams.
func (h *Handler) isLocalHolder(holder string) bool {
	return strings.HasPrefix(holder, h.holder+"/")
}

// publishReply sends a client's response that no local request was waiting
// for to the replicas waiting on the session's bus.
func (h *Handler) publishReply(ctx context.Context, sess *session, body []byte) error {
	err := h.store.Publish(ctx, sess.id, frame(frameReply, body))
	if errors.Is(err, sessionstore.ErrNoSubscribers) {
		return nil // nobody waits for it: a late answer, accepted and ignored
	}
	return err
}

// deliverReply routes a reply frame to the requests and pings waiting on
// this replica. Anything else is not for the caller and is ignored.
func deliverReply(sess *session, msg []byte) {
	if len(msg) < 2 || msg[0] != frameReply {
		return
	}
	env, f := parseEnvelope(msg[1:])
	if f != nil || env.Method != "" {
		return
	}
	sess.calls.deliver(env.ID, env.Result, env.Error)
}

// endedInStore reports whether the store says the session is no longer
// live (an outage is not an answer).
func (h *Handler) endedInStore(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.CleanupTimeout)
	defer cancel()
	_, err := h.store.Get(ctx, id)
	return isGone(err)
}

// restoreRecord sets the mcp-go state of an adopted session from its
// record: the client's initialize parameters and the negotiated version,
// and the caller it is bound to.
func (s *session) restoreRecord(rec sessionstore.Record) {
	s.caller = rec.Caller
	var p mcp.InitializeParams
	if len(rec.ClientInfo) > 0 {
		// A record written by initialize holds its params; a malformed
		// one leaves client info empty rather than refusing the session.
		_ = json.Unmarshal(rec.ClientInfo, &p)
	}
	s.SetClientInfo(p.ClientInfo)
	s.SetClientCapabilities(p.Capabilities)
	s.SetProtocolVersion(rec.ProtocolVersion)
	s.Initialize()
}

// A message a pump forwards to the stream's replica (on the holder's
// topic) carries how many streams already failed to write it, so that
// maxWriteAttempts holds across replicas: a JSON message as it is for
// none, else one byte of count (below ' ', which no JSON text starts with)
// before it.

// encodeForwarded is c as a pump forwards it.
// A forwarded message with attempts or an event id starts with one byte
// below ' ' (no JSON message does): the attempts, plus forwardedHasID when
// the event id follows, ended by '\n' (ids hold no newline).
func encodeForwarded(c carried) []byte {
	if c.attempts <= 0 && c.id == "" {
		return c.msg
	}
	b := byte(min(max(c.attempts, 0), maxWriteAttempts))
	if c.id == "" {
		return append([]byte{b}, c.msg...)
	}
	out := make([]byte, 0, 2+len(c.id)+len(c.msg))
	out = append(out, b|forwardedHasID)
	out = append(out, c.id...)
	out = append(out, '\n')
	return append(out, c.msg...)
}

// forwardedHasID marks a forwarded message that carries its event id.
const forwardedHasID = 0x10

// decodeForwarded reads a message a pump forwarded.
func decodeForwarded(m []byte) carried {
	if len(m) == 0 || m[0] >= ' ' {
		return carried{msg: m}
	}
	c := carried{attempts: int(m[0] &^ forwardedHasID)}
	rest := m[1:]
	if m[0]&forwardedHasID != 0 {
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			c.id, rest = string(rest[:i]), rest[i+1:]
		}
	}
	c.msg = rest
	return c
}

// failRemoteCall tells the replica that issued msg, a server-to-client
// request forwarded to this one and dropped here (maxWriteAttempts), that
// it cannot be delivered: an error answer for its id on the session's bus,
// which its waiting call takes as the client's. Anything that is not a
// request is left alone.
func (s *session) failRemoteCall(msg []byte, cause error) {
	env, f := parseEnvelope(msg)
	if f != nil || env.Method == "" || len(env.ID) == 0 {
		return
	}
	reply, err := json.Marshal(rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: env.ID,
		Error: rpcErrorBody{Code: mcp.INTERNAL_ERROR, Message: cause.Error()}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.h.cfg.CleanupTimeout)
	defer cancel()
	if err := s.h.publishReply(ctx, s, reply); err != nil {
		s.h.log.Debug("lifeline: cannot tell the issuing replica that its request was dropped",
			"session", logID(s.id), "err", err)
	}
}
