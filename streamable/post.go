package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// postMessage is a POST's body once acceptPost has read and checked it:
// a batch, or one message with its envelope and the era it declares.
type postMessage struct {
	body  []byte
	batch bool
	env   envelope
	era   requestEra
}

// servePost serves a POST: acceptPost reads and checks it, then the
// message runs for its era. The two are apart so that acceptPost's frame
// is off the stack while mcp-go handles the message, whose decoding of a
// 2026-07-28 request's _meta runs deep: with the handler's frames under it
// shallow, the request fits in a 16 KiB goroutine stack, as it does under
// mcp-go alone, where the runtime would otherwise grow the connection's
// stack to 32 KiB, copying it, each time the collector has shrunk it
// (bench's TestModernCallFitsA16KiBStack holds it). The message goes on
// by pointer for the same reason. And before anything, the stack the
// message will need is reserved, while the frames above are few
// (reserveStack).
func (h *Handler) servePost(w http.ResponseWriter, r *http.Request) {
	reserveStack(false)
	var m postMessage
	if !h.acceptPost(w, r, &m) {
		return
	}
	switch {
	case m.batch:
		h.serveBatch(w, r, m.body)
	case m.era.modern():
		h.serveModern(w, r, &m)
	default:
		h.serveSessionPost(w, r, &m.env, m.body)
	}
}

// acceptPost reads and checks a POST's headers and body into m: false,
// with the request answered, when they are refused.
//
//go:noinline
func (h *Handler) acceptPost(w http.ResponseWriter, r *http.Request, m *postMessage) bool {
	if !acceptsPostAnswers(r) {
		h.refuseWithID(w, r, errNotAcceptablePost())
		return false
	}
	if !isJSONContent(r) {
		h.refuseWithID(w, r, errContentType(r.Header.Get("Content-Type")))
		return false
	}
	body, f := h.readBody(w, r)
	if f != nil {
		h.refuse(w, r, f)
		return false
	}
	m.body = body
	if isBatch(body) {
		if eraOf(r, nil).modern() {
			h.writeFailure(w, errModernBatch())
			return false
		}
		m.batch = true
		return true
	}
	if m.env, f = parseEnvelope(body); f != nil {
		// A JSON object that is not a valid message still names its id,
		// if it has one.
		h.writeFailure(w, f.forRequest(itemID(body)))
		return false
	}
	m.era = eraOf(r, m.env.Params)
	return true
}

// serveSessionPost serves one message of the session era (or of
// stateless mode): an initialize, a request, a notification or a response.
func (h *Handler) serveSessionPost(w http.ResponseWriter, r *http.Request, envp *envelope, body []byte) {
	env := *envp
	if h.cfg.Stateless {
		if env.Method == string(mcp.MethodInitialize) {
			var f *failure
			if env, body, f = h.negotiateInitialize(env, body); f != nil {
				h.writeFailure(w, f.forRequest(env.ID))
				return
			}
		} else if f := h.checkProtocolVersion(r); f != nil {
			h.writeFailure(w, f.forRequest(env.requestID()))
			return
		}
		h.serveStateless(w, r, env, body)
		return
	}
	if env.Method == string(mcp.MethodInitialize) {
		h.initialize(w, r, env, body)
		return
	}
	if f := h.checkProtocolVersion(r); f != nil {
		h.writeFailure(w, f.forRequest(env.requestID()))
		return
	}
	if env.Method == "" && h.deliverLocal(r, env) {
		h.met.answered(causeAccepted)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	sess, f := h.session(r, true)
	if f != nil {
		h.writeFailure(w, f.forRequest(env.requestID()))
		return
	}
	switch {
	case env.Method == "":
		if !sess.calls.deliver(env.ID, env.Result, env.Error) {
			if !h.shared {
				h.writeFailure(w, errUnknownResponseID(env.ID))
				return
			}
			// Another replica may have sent the request: it listens on
			// the session's bus for the answer.
			if err := h.publishReply(r.Context(), sess, body); err != nil {
				h.writeFailure(w, h.storeFailure(err))
				return
			}
		}
		h.met.answered(causeAccepted)
		w.WriteHeader(http.StatusAccepted)
	case len(env.ID) == 0:
		h.acceptNotification(w, r, sess, body)
	default:
		h.serveRequest(w, r, sess, env, body)
	}
}

// requestID is the id the transport's error answers to this message echo:
// a request's own, none (null) for a notification or a response.
func (e envelope) requestID() json.RawMessage {
	if e.Method == "" {
		return nil
	}
	return e.ID
}

// deliverLocal hands a response (a pong, most often) to the request of a
// live session of this process that is waiting for it, without asking the
// store: the session is live here, and a stream's pongs must not wait on a
// slow store (or fail with it: streams keep serving through an outage).
// It reports false when nothing here waits for the id; the response then
// takes the normal path.
func (h *Handler) deliverLocal(r *http.Request, env envelope) bool {
	id := headerValue(r.Header, headerSessionID)
	if id == "" {
		return false
	}
	sess := h.lookup(id)
	// A response from a caller the session is not bound to takes the
	// normal path, which refuses it.
	return sess != nil && sess.active() && h.sameCaller(r, sess) && sess.calls.deliverIssued(env.ID, env.Result, env.Error)
}

// initialize creates a session, registers it with the MCPServer and answers
// the initialize request with the session id in Mcp-Session-Id.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, env envelope, body []byte) {
	if headerValue(r.Header, headerSessionID) != "" {
		h.writeFailure(w, errInitializeWithSession().forRequest(env.ID))
		return
	}
	if len(env.ID) == 0 {
		h.writeFailure(w, errInvalidMessage("initialize must be a request with an id"))
		return
	}
	env, body, f := h.negotiateInitialize(env, body)
	if f != nil {
		h.writeFailure(w, f.forRequest(env.ID))
		return
	}
	id := h.newSessionID(r)
	if !visibleASCII(id) {
		h.writeFailure(w, errInternal("the session id generator produced an id that is not visible ASCII").forRequest(env.ID))
		return
	}
	caller, f := h.identify(r)
	if f != nil {
		h.writeFailure(w, f.forRequest(env.ID))
		return
	}
	ctx, span := h.startRequestSpan(h.requestContext(r.Context(), r), r, nil, &env)
	sess, resp, f := h.createSession(ctx, id, caller, env, body)
	if f != nil {
		endSpanFailed(span, f)
		h.writeFailure(w, f.forRequest(env.ID))
		return
	}
	if sess == nil {
		// A failed initialize creates no session.
		endRequestSpan(span, resp)
		h.writeJSON(w, resp, "", h.cfg.WriteTimeout)
		return
	}
	if span != nil {
		span.SetAttributes(sess.spanID(), semconv.McpProtocolVersion(sess.ProtocolVersion()))
	}
	h.writeJSON(w, resp, id, h.cfg.WriteTimeout)
	endRequestSpan(span, resp)
}

// createSession stores, inserts and registers a session and runs initialize
// on it. It holds the session's lifecycle lock throughout, so DELETE, expiry
// and Shutdown see either no session or a whole one. A nil session with a
// response means initialize failed and no session was kept. The session is
// bound to caller (a digest; "" for none).
func (h *Handler) createSession(ctx context.Context, id, caller string, env envelope, body []byte) (*session, mcp.JSONRPCMessage, *failure) {
	sess := newSession(h, id)
	sess.caller, sess.counted = caller, caller != ""
	sess.life.Lock()
	defer sess.life.Unlock()
	// The record goes first: a session the handler holds always has one.
	// Only replicas that adopt the session read the client's initialize
	// params back; alone, mcp-go's parsed copy is the only one kept.
	var params []byte
	if h.shared {
		params = env.Params
	}
	// A caller at its bound is refused before the store is asked (addSession
	// checks again, for callers racing for the last place).
	if f := h.callerFull(sess); f != nil {
		return nil, nil, f
	}
	if err := h.store.Create(ctx, sessionstore.Record{ID: id, ClientInfo: params, Caller: caller}, h.cfg.IdleTTL); err != nil {
		if errors.Is(err, sessionstore.ErrExists) {
			return nil, nil, errInternal("the session id generator repeated an id")
		}
		h.storeFailed(ctx, "create", err)
		return nil, nil, errStore(err)
	}
	sess.home = true // broadcasts for its streams wait here between them (broadcast_cluster.go)
	if f := h.addSession(sess); f != nil {
		h.dropRecord(id)
		return nil, nil, f
	}
	if err := h.mcp.RegisterSession(ctx, sess); err != nil {
		h.discardLocked(sess)
		return nil, nil, errInternal("registering the session: " + err.Error())
	}
	resp := h.handle(ctx, sess, env.ID, body, &env)
	if _, failed := resp.(mcp.JSONRPCError); failed || resp == nil || isRPCError(resp) {
		h.discardLocked(sess)
		return nil, resp, nil
	}
	rec := sessionstore.Record{ID: id, ProtocolVersion: sess.ProtocolVersion(), ClientInfo: params}
	if err := h.store.Update(ctx, rec); err != nil {
		if h.shared {
			// Other replicas would adopt it without its protocol
			// version: no session rather than a half-made one.
			h.discardLocked(sess)
			return nil, nil, errStore(err)
		}
		h.log.Warn("lifeline: store update after initialize", "session", logID(id), "err", err)
	}
	h.met.sessionCreated()
	return sess, resp, nil
}

// dropRecord removes the record of a session that never served a request:
// its client never learnt the id, so nothing, not even a tombstone, is kept.
func (h *Handler) dropRecord(id string) {
	if err := h.store.Remove(context.Background(), id); err != nil {
		h.log.Warn("lifeline: store remove of a refused session", "session", logID(id), "err", err)
	}
}

// discardLocked removes a session that never got to serve a request, and
// its record. Callers hold sess.life.
func (h *Handler) discardLocked(sess *session) {
	if started, _ := sess.beginTerminate(errDiscarded, false); started {
		sess.finishTerminate(context.Background(), errDiscarded) // leaves the record
		h.dropRecord(sess.id)
	}
}

func isRPCError(m mcp.JSONRPCMessage) bool {
	_, ok := m.(rpcError)
	return ok
}
