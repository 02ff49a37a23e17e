package streamable

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"
)

// serveRequest runs one JSON-RPC request through the MCPServer on this
// handler goroutine. A request that sends nothing and answers within the
// heartbeat interval costs no other goroutine: its answer is written here.
// One that sends messages (progress, logging, server requests), or runs
// past the interval, gets a writer goroutine that upgrades the response to
// SSE and writes as they come (keep-alives included); the writer is joined
// before the answer is written, so the last message before it is never lost.
func (h *Handler) serveRequest(w http.ResponseWriter, r *http.Request, sess *session, env envelope, body []byte) {
	h.runRequest(w, r, sess, env, body, nil)
}

// runRequest is serveRequest for a request on its own (batch nil) or one
// of a JSON-RPC batch, whose answer joins the batch's response (batch.go).
func (h *Handler) runRequest(w http.ResponseWriter, r *http.Request, sess *session, env envelope, body []byte, batch *batchResponse) {
	h.runRequestOn(w, r, sess, &env, body, batch, nil)
}

// runRequestOn is runRequest for a listen stream too (feed not nil): its
// writer also writes what the feed takes (listen.go).
func (h *Handler) runRequestOn(w http.ResponseWriter, r *http.Request, sess *session, env *envelope, body []byte, batch *batchResponse, feed *listenFeed) {
	if h.resumablePost(sess, batch, feed) {
		if srv := h.inlineServer(w, r); srv != nil {
			h.runResumableInline(w, r, srv, sess, env, body)
		} else {
			h.runResumable(w, r, sess, env, body)
		}
		return
	}
	parent, detached := h.detachedContext(r)
	ctx, span := h.startRequestSpan(h.requestContext(h.eraContext(parent, sess), r), r, sess, env)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &postStream{h: h, w: w, ctx: ctx, cancel: cancel, sess: sess, id: env.ID, batch: batch, feed: feed, traced: span != nil}
	if detached {
		if r.Context().Err() != nil { // its client left already: it starts cancelled, as a derived context would
			cancel(errClientLeft)
		}
		p.watchClientInline(r)
	}
	// The whole request, response included, is work the session's
	// termination waits for and cancels (cancelRunning; Shutdown only
	// after a grace): its response writer is squeezed, so an answer that
	// exists still reaches a client that reads, and is closed only when
	// the termination stops waiting.
	if f := sess.beginWork(p); f != nil {
		endSpanFailed(span, f)
		if batch != nil {
			batch.fail(f.forRequest(env.ID))
			return
		}
		h.writeFailure(w, f.forRequest(env.ID))
		return
	}
	defer sess.endWork(p)
	p.prepare()
	p.run(body, env)
	if detached {
		h.watch.remove(p)
		p.clientWatch.Wait() // a clientGone that runs already cancels the request
	}
}

// detachedContext returns the context a request's own derives from: r's
// without its cancellation (true), whose client's leaving the request
// watch then tells the request of (watchClientInline: at its next look,
// every watchTick, in the request's first moments, and by a callback of
// its own after that), as it does for a resumable request; whatever else
// ends r's context (a middleware's cancel, a server's base context) reaches
// the request the same way, as its client's leaving (errClientLeft). A
// context derived from r's own would cost every request a place in its
// parent's set of children, made on first use, and the parent's done
// channel: three allocations and their code, on a call that answers in
// microseconds. It is r's own (false) when r's context has a deadline,
// which the request's must report, or when a Config.ContextFunc is set,
// which is given the request's context before the request's own
// cancellation is added, and may derive from it what must end with the
// request.
func (h *Handler) detachedContext(r *http.Request) (context.Context, bool) {
	ctx := r.Context()
	if h.cfg.ContextFunc != nil {
		return ctx, false
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, false
	}
	return context.WithoutCancel(ctx), true
}

// prepare makes the request's session (its queues come on first use).
func (p *postStream) prepare() {
	p.rs = &p.ownSession
	p.rs.init(p.sess, p.startWriter, p.ctx.Done())
	p.rs.feed = p.feed
	p.rs.post = p
}

// run runs the request through the MCPServer and answers it; env is
// read as handle says.
func (p *postStream) run(body []byte, env *envelope) {
	defer p.finish()
	p.h.watch.add(p, streams(p.w)) // the keep-alive (and the client, watchClientInline)
	resp := p.h.handle(p.ctx, p.rs, p.id, body, env)
	if !p.watch.clientOwned {
		p.h.watch.remove(p)
	}
	p.stopWriter()
	p.respond(resp)
	if p.traced { // after the answer's write, whose deadline it may record
		endRequestSpan(trace.SpanFromContext(p.ctx), resp)
	}
}

// streamKind is the kind of stream the response is once upgraded.
func (p *postStream) streamKind() streamKind {
	if p.feed != nil {
		return streamListen
	}
	return streamPostSSE
}

// postStream is the response to one POSTed request, upgraded to SSE on the
// first message the request sends.
type postStream struct {
	h      *Handler
	w      http.ResponseWriter
	ctx    context.Context
	cancel context.CancelCauseFunc // ends the request
	sess   *session
	rs     *requestSession // &ownSession
	id     json.RawMessage // the request's id, for the transport's own error answers
	batch  *batchResponse  // the batch's shared response, for a request of a batch
	feed   *listenFeed     // a listen stream's broadcasts (listen.go), else nil

	// A resumable request's (post_resume.go, post_letgo.go): its stream's
	// name in the event log, whether an event id went out on its response,
	// and the writer's hand-over of the response.
	//
	// The small fields sit together, here and below, so that a postStream
	// fits in 512 bytes: the runtime allocates a larger object with pointers
	// on a path of its own (mallocgcSmallScanHeader), code a request would
	// run nowhere else (TestPostStreamFitsASmallObject).
	resumable      bool
	chunked        bool // with srv: HTTP/1.1, the response's body is chunked
	keepConn       bool // with srv: a let-go hands the connection back to srv
	noHangUp       bool // the writer's: the connection could not be taken over
	idOut          atomic.Bool
	srv            *http.Server   // runs on srv's handler goroutine: a let-go takes the connection over (post_inline.go)
	stream         string         // named when the response becomes a stream (name)
	signal         string         // its postSignals key
	clientWatch    sync.WaitGroup // a clientGone running or armed: watchClient's, the request watch's or its handed-off callback
	watch          watchEntry     // its place in the Handler's requestWatch
	releaseWake    chan struct{}  // a release is asked for (buffered); made with the writer (makeReleaseChannels)
	released       chan struct{}  // closed by the writer once it let go of the response
	releaseRefused chan struct{}  // the session's bound refused a let-go (buffered)
	detached       *time.Timer    // bounds the request once let go of (mu)
	letGone        bool           // the writer's: released is closed
	detachedDone   bool           // the request has returned: detached stays stopped (mu)
	lastOK         bool           // the last send was recorded or written whole
	last           bool           // the answer is being sent: the response's last write (writeLast)
	traced         bool           // ctx holds the request's span (trace.go)
	started        bool           // the writer was started (mu)
	stopped        bool           // stopWriter ran (mu)

	ownSession requestSession
	// The session's running requests, a list termination walks: guarded by
	// sess.mu.
	prevWork, nextWork *postStream

	// Written by the writer goroutine while it runs, else by the handler.
	sse  *sseStream
	lost int
	held *heldBack // notifications held back before the response opens (post_linger.go)
	// The whole response's events, written before they are recorded: the
	// record goes once the request returns (post_behind.go).
	behind [][]byte

	mu         sync.Mutex    // guards the writer's start and stop (started, stopped)
	done       chan struct{} // closed by stopWriter: the request has returned
	writerDone chan struct{} // closed when the writer has exited
}

// upgrade turns the response into an SSE stream, writing first (or an
// opening comment) with the headers. It reports whether the stream can
// still deliver.
func (p *postStream) upgrade(first ...[]byte) bool {
	if p.batch != nil {
		return p.batch.upgrade(p, first...)
	}
	if p.sse != nil {
		return !p.sse.dying()
	}
	if p.resumable {
		// Only sendRecorded carries messages here: first is empty.
		p.name()
		return p.openRecorded(p.recordPriming(p.recordParent()), nil, first)
	}
	p.sse = newSSEStream(p.ctx, p.w, p.h.cfg.WriteTimeout)
	p.sse.met = p.h.met
	p.rs.stream.Store(p.sse)
	p.h.postStreams.Add(1)
	p.h.met.streamOpened(p.streamKind())
	p.sess.addPostStream(p.sse) // squeezed or closed if the session is terminating
	return p.sse.start(first...) == nil
}

func (p *postStream) sendNotification(n mcp.JSONRPCNotification) {
	if b := p.h.encodeNotification(p.sess.id, n); b != nil {
		p.send(b)
	}
}

// send writes msgs on the request's stream, in one write. Once the stream
// has failed (client gone, write timed out or squeezed, closed when the
// session's termination gave up waiting) the request is cancelled: nothing
// it sends can reach its client any more. A request cancelled otherwise (by
// its session's termination) still writes, to a client that reads.
func (p *postStream) send(msgs ...[]byte) {
	if p.resumable {
		p.sendRecorded(msgs)
		return
	}
	var ok bool
	switch {
	case p.sse == nil:
		ok = p.upgrade(msgs...)
	case p.last:
		ok = !p.sse.ended.Load() && p.sse.writeLast(eventsSize(nil, msgs), func() error { return p.sse.putEvents(msgs) }) == nil
	default:
		ok = !p.sse.ended.Load() && p.sse.events(msgs) == nil
	}
	if !ok {
		p.lost += len(msgs)
		p.cancel(context.Cause(p.sse.ctx))
	}
}

func (p *postStream) keepalive() {
	if p.resumable && p.sse != nil {
		p.aliveMarker()
	}
	if p.sse == nil {
		p.upgrade() // the opening comment is the keep-alive
		return
	}
	if !p.sse.dying() && p.sse.comment("keepalive") != nil {
		if p.resumable && p.idOut.Load() {
			// Its client can resume: the request goes on, let go of.
			p.letGoIfEnded()
			return
		}
		p.cancel(context.Cause(p.sse.ctx))
	}
}

func (p *postStream) respond(resp mcp.JSONRPCMessage) {
	if p.batch != nil {
		p.batch.respond(p, resp)
		return
	}
	// Notifications the writer held back (post_linger.go), which it
	// left to the answer once the request returned: recorded with it and
	// written with it, in the response's opening write.
	var held [][]byte
	if p.held != nil {
		held = p.takeHeld()
	}
	// A response let go of before it began (closed before its opening
	// write) belongs to a handler that has returned: the answer is only
	// recorded, for the client's resume.
	if held == nil && (p.sse == nil || (!p.sse.begun() && !p.letGone)) {
		p.respondJSON(resp)
		return
	}
	b, err := appendResponseJSON(nil, resp)
	if err != nil {
		p.h.log.Error("lifeline: response does not encode", "session", logID(p.sess.id), "err", err)
		p.lost++
		if held != nil {
			p.send(held...)
		}
		return
	}
	// Written even if the request was cancelled (a terminating session):
	// an answer that exists goes to a client that can take it. It is the
	// response's last write (writeLast).
	p.last = true
	if held != nil {
		p.send(append(held, b)...)
		return
	}
	p.send(b)
}

func (p *postStream) finish() {
	if p.lost > 0 {
		p.h.log.Info("lifeline: messages for a request could not be written: its client is gone",
			"session", logID(p.sess.id), "messages", p.lost)
	}
	if p.sse != nil && p.batch == nil { // a batch's stream ends with the batch
		p.sess.removePostStream(p.sse)
		p.h.postStreams.Add(-1)
		p.h.met.streamClosed(p.streamKind())
	}
}

// writeJSON answers with one JSON-RPC message as application/json, under a
// write deadline. A nil message is answered with 202 and no body. A small
// one (the common initialize answer) is written as respondJSON writes a
// small answer: left to net/http to send with its length once the handler
// returns, no deadline or flush needed.
func (h *Handler) writeJSON(w http.ResponseWriter, msg mcp.JSONRPCMessage, sessionID string, timeout time.Duration) {
	if sessionID != "" {
		w.Header().Set(headerSessionID, sessionID)
	}
	if msg == nil {
		h.met.answered(causeAccepted)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	b, err := json.Marshal(msg)
	if err != nil {
		h.writeFailure(w, errInternal("the response does not encode: "+err.Error()))
		return
	}
	if len(b) < smallResponse {
		b = append(b, '\n')
		hd := w.Header()
		hd.Set("Content-Type", "application/json")
		if len(b) > unchunkedResponse {
			hd.Set("Content-Length", strconv.Itoa(len(b)))
		}
		h.met.answered(causeOK)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(timeout))
	w.Header().Set("Content-Type", "application/json")
	h.met.answered(causeOK)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
	if rc.Flush() == nil {
		_ = rc.SetWriteDeadline(time.Time{})
	}
}

// respondJSON writes the response as application/json. A large one goes
// through a tracked, deadline-bound writer, so that DELETE and Shutdown can
// bound (squeeze) and at their deadline interrupt a client that does not
// read it.
func (p *postStream) respondJSON(resp mcp.JSONRPCMessage) {
	if resp == nil {
		p.h.met.answered(causeAccepted)
		p.w.WriteHeader(http.StatusAccepted)
		return
	}
	buf := p.h.answers.get()
	enc, err := appendResponseJSON(buf.AvailableBuffer(), resp)
	if err != nil {
		p.h.answers.put(buf)
		p.h.writeFailure(p.w, errInternal("the response does not encode: "+err.Error()).forRequest(p.id))
		return
	}
	buf.Write(append(enc, '\n')) // in place when it fit the buffer
	b := buf.Bytes()
	status := http.StatusOK
	if p.sess.modern {
		if e, ok := resp.(mcp.JSONRPCError); ok {
			status = modernErrorStatus(e.Error.Code)
		}
	}
	if len(b) <= smallResponse {
		// A small answer fits net/http's write buffer: the handler never
		// blocks on it (net/http sends it, with a Content-Length, once the
		// handler has returned), so it needs no deadline and no
		// interruptible writer.
		h := p.w.Header()
		h.Set("Content-Type", "application/json")
		if len(b) > unchunkedResponse {
			// Below this net/http counts the length itself, more
			// cheaply than a header set here.
			h.Set("Content-Length", strconv.Itoa(len(b)))
		}
		p.h.met.answered(modernCause(status))
		p.w.WriteHeader(status)
		_, _ = p.w.Write(b)
		// Copied into the writer's buffer (at most its size), or refused:
		// the buffer can take the next answer.
		p.h.answers.put(buf)
		return
	}
	// A larger answer is written from the buffer itself, and an HTTP/2
	// write that fails may still be copying it: the buffer is not reused.
	st := newSSEStream(p.ctx, p.w, p.h.cfg.WriteTimeout)
	st.met = p.h.met
	// Written even if the session is terminating (squeezed then, or
	// closed once its termination gave up waiting).
	p.sess.addPostStream(st)
	defer p.sess.removePostStream(st)
	err = st.write(func() error {
		h := p.w.Header()
		h.Set("Content-Type", "application/json")
		p.h.met.answered(modernCause(status))
		p.w.WriteHeader(status)
		return st.put(b) // in chunks: a slow reader's progress extends the deadline
	})
	if err != nil && !st.begun() {
		p.h.writeFailure(p.w, p.h.goneAnswer().forRequest(p.id))
	}
}

// handle runs one request (id, body) through the MCPServer, timed in
// mcp.server.operation.duration (metrics_operation.go), which reads env,
// the request's envelope; env may be nil when that is not recorded
// (opTimed false).
func (h *Handler) handle(ctx context.Context, cs server.ClientSession, id json.RawMessage, body []byte, env *envelope) mcp.JSONRPCMessage {
	start := h.met.opStart()
	resp := h.handleMessage(ctx, cs, id, body)
	if !start.IsZero() && env != nil {
		h.met.operation(start, env, sessionVersion(cs), resp)
	}
	return resp
}

// handleMessage runs one request through the MCPServer. A panic in a
// handler is answered as a JSON-RPC internal error instead of crashing the
// process (net/http would recover it on its own goroutine, not on this
// worker).
func (h *Handler) handleMessage(ctx context.Context, cs server.ClientSession, id json.RawMessage, body []byte) (resp mcp.JSONRPCMessage) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("lifeline: panic while handling a request", "session", logID(cs.SessionID()), "panic", v)
			resp = rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: rpcErrorBody{
				Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("internal error: the request handler panicked: %v", v)}}
		}
	}()
	ctx, slot := withCapabilitySlot(ctx)
	return applyMissingCapability(h.mcp.HandleMessage(h.mcp.WithContext(ctx, cs), body), slot)
}

// notify runs a client's notification through the MCPServer. A panic in
// its handler is logged and the notification dropped, as mcp-go does not
// recover it: the client expects no answer, and the request that carried it
// (a batch's other messages included) is served on.
func (h *Handler) notify(ctx context.Context, cs server.ClientSession, body []byte) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("lifeline: panic while handling a notification", "session", logID(cs.SessionID()), "panic", v)
		}
	}()
	h.mcp.HandleMessage(h.mcp.WithContext(ctx, cs), body)
}

// acceptNotification runs a client's notification on sess, in the context
// sess's requests run in, and answers 202.
func (h *Handler) acceptNotification(w http.ResponseWriter, r *http.Request, sess *session, body []byte) {
	h.notify(h.requestContext(h.eraContext(r.Context(), sess), r), sess, body)
	h.met.answered(causeAccepted)
	w.WriteHeader(http.StatusAccepted)
}

// smallResponse is the largest JSON answer written without a deadline: it
// fits net/http's 4 KiB write buffer, so the handler cannot block on it.
const smallResponse = 4 << 10

// unchunkedResponse is the most a handler can write, without flushing, and
// still have net/http send it with a Content-Length it computes itself (its
// buffer before chunking).
const unchunkedResponse = 2048
