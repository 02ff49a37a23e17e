package streamable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// JSON-RPC batches: protocol version 2025-03-26 lets a client POST an
// array of messages (2025-06-18 removed it). Their requests run one after
// another, each as a request of its own (its own context, queues and
// writer), sharing one response: a JSON array of the answers, or, once one
// of them sends a message (progress, logging, a server request), an SSE
// stream that carries every message and answer from then on, the answers
// made before it first.

// batchVersion is the one protocol version that has JSON-RPC batches.
const batchVersion = "2025-03-26"

// maxBatchMessages bounds the messages of one batch.
const maxBatchMessages = 64

// isBatch reports whether body is a JSON array (a JSON-RPC batch).
func isBatch(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// batchResponse is the one response that the requests of a batch share.
// Only the handler goroutine, or the writer of the request that is running,
// touches it: the requests run one at a time.
type batchResponse struct {
	ctx     context.Context // the whole batch's; the SSE stream's parent
	w       http.ResponseWriter
	sse     *sseStream // once a request sent a message
	answers [][]byte   // answers not yet written
}

// serveBatch serves a JSON-RPC batch.
func (h *Handler) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		h.writeFailure(w, errParse("the batch is not a JSON array of messages: "+err.Error()))
		return
	}
	switch {
	case len(items) == 0:
		h.writeFailure(w, errInvalidMessage("the batch is empty"))
		return
	case len(items) > maxBatchMessages:
		h.writeFailure(w, errInvalidMessage(fmt.Sprintf("the batch holds %d messages; at most %d are served", len(items), maxBatchMessages)))
		return
	}
	if f := h.checkProtocolVersion(r); f != nil {
		h.writeFailure(w, f)
		return
	}
	var sess *session
	if h.cfg.Stateless {
		if v := headerValue(r.Header, headerProtocolVersion); v != "" && v != batchVersion {
			h.writeFailure(w, errBatchVersion(v))
			return
		}
		if !h.servesSession(batchVersion) {
			h.writeFailure(w, errUnsupportedVersion(batchVersion, h.served.session))
			return
		}
		sess = newEphemeralSession(h, "stateless-", false)
		sess.Initialize()
		if f := h.addSession(sess); f != nil {
			h.writeFailure(w, f)
			return
		}
		defer sess.endEphemeral()
	} else {
		var f *failure
		if sess, f = h.session(r, true); f != nil {
			h.writeFailure(w, f)
			return
		}
		if v := sess.ProtocolVersion(); v != batchVersion {
			h.writeFailure(w, errBatchVersion(v))
			return
		}
	}
	b := &batchResponse{ctx: h.requestContext(r.Context(), r), w: w}
	for _, item := range items {
		h.serveBatchItem(b, r, sess, item)
	}
	h.finishBatch(b, sess)
}

// serveBatchItem serves one message of a batch: a request's answer joins
// the batch's response, a bad message gets an error answer of its own.
func (h *Handler) serveBatchItem(b *batchResponse, r *http.Request, sess *session, item json.RawMessage) {
	env, f := parseEnvelope(item)
	switch {
	case f != nil:
		b.fail(f.forRequest(itemID(item)))
	case env.Method == string(mcp.MethodInitialize):
		b.fail(errInvalidMessage("initialize must not be part of a JSON-RPC batch").forRequest(env.ID))
	case env.Method == "":
		h.batchReply(b, r, sess, env, item)
	case len(env.ID) == 0:
		h.notify(h.requestContext(r.Context(), r), sess, item)
	default:
		h.runRequest(b.w, r, sess, env, item, b)
	}
}

// batchReply delivers a client's response in a batch. A response it cannot
// deliver gets an error answer whose id is null, the id it names being one
// of the server's own request ids: the client's requests, in the same
// array, may use the same values.
func (h *Handler) batchReply(b *batchResponse, r *http.Request, sess *session, env envelope, item []byte) {
	switch {
	case sess.stateless:
		b.fail(errUnknownResponseID(env.ID).forRequest(nil))
	case sess.calls.deliver(env.ID, env.Result, env.Error):
	case !h.shared:
		b.fail(errUnknownResponseID(env.ID).forRequest(nil))
	default:
		if err := h.publishReply(r.Context(), sess, item); err != nil {
			b.fail(h.storeFailure(err))
		}
	}
}

// itemID reads the id of a message that did not parse as one, if it has
// one.
func itemID(item []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(item, &m) != nil || !validIDValue(m.ID) {
		return nil // none, null, or no id a client could match
	}
	return m.ID
}

// fail adds an error answer.
func (b *batchResponse) fail(f *failure) {
	id := f.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: rpcErrorBody{Code: f.code, Message: f.message}})
	b.add(msg)
}

// add keeps an answer for the response, or writes it at once on a stream
// that has begun.
func (b *batchResponse) add(msg []byte) {
	if b.sse != nil {
		if !b.sse.dying() {
			_ = b.sse.event(msg)
		}
		return
	}
	b.answers = append(b.answers, msg)
}

// upgrade is postStream.upgrade for a request of a batch: the batch's one
// stream is made by the first request that sends something, and opens
// with the answers made before it.
func (b *batchResponse) upgrade(p *postStream, first ...[]byte) bool {
	if b.sse == nil {
		st := newSSEStream(b.ctx, b.w, p.h.cfg.WriteTimeout)
		st.met = p.h.met
		p.h.postStreams.Add(1)
		p.h.met.streamOpened(streamPostSSE)
		p.sess.addPostStream(st) // squeezed or closed if the session is terminating
		p.sse = st
		p.rs.stream.Store(st)
		if err := st.start(append(slices.Clip(b.answers), first...)...); err != nil && !st.begun() {
			// Closed before it wrote anything (the session's termination
			// gave up waiting): the answers stay for the JSON array.
			p.sess.removePostStream(st)
			p.h.postStreams.Add(-1)
			p.h.met.streamClosed(streamPostSSE)
			return false
		}
		b.sse, b.answers = st, nil
		return !st.dying()
	}
	p.sse = b.sse
	p.rs.stream.Store(b.sse)
	if len(first) == 0 {
		return !b.sse.dying()
	}
	return !b.sse.dying() && b.sse.events(first) == nil
}

// respond is postStream.respond for a request of a batch.
func (b *batchResponse) respond(p *postStream, resp mcp.JSONRPCMessage) {
	if resp == nil {
		return
	}
	msg, err := json.Marshal(resp)
	if err != nil {
		p.h.log.Error("lifeline: response does not encode", "session", logID(p.sess.id), "err", err)
		b.fail(errInternal("the response does not encode: " + err.Error()).forRequest(p.id))
		return
	}
	b.add(msg)
}

// finishBatch writes what is left of the batch's response: the answers as
// a JSON array, 202 when there are none (only notifications and
// responses), or the rest of the answers on the stream.
func (h *Handler) finishBatch(b *batchResponse, sess *session) {
	if b.sse != nil {
		if len(b.answers) > 0 && !b.sse.dying() {
			_ = b.sse.events(b.answers)
		}
		sess.removePostStream(b.sse)
		h.postStreams.Add(-1)
		h.met.streamClosed(streamPostSSE)
		return
	}
	if len(b.answers) == 0 {
		h.met.answered(causeAccepted)
		b.w.WriteHeader(http.StatusAccepted)
		return
	}
	arr := append([]byte{'['}, bytes.Join(b.answers, []byte{','})...)
	arr = append(arr, ']')
	p := &postStream{h: h, w: b.w, ctx: b.ctx, sess: sess}
	p.respondJSON(json.RawMessage(arr))
}
