package streamable

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// Resumable POST streams. With an event log, the SSE response of a
// session-era request (not one of a batch, not a listen stream, not
// 2026-07-28) records every event it carries under a stream name of its
// own (event_ids.go) before writing it with its id, and a 2025-11-25
// response opens with a priming event and a retry field. Once an id went
// out, the response may end before the request does: its client left, the
// handler asked (CloseSSEStream), or the replica drains. The request then
// goes on, on the worker goroutine that runs it, recording what it sends,
// answer included, for the client's GET with Last-Event-ID
// (resume_post.go); its handler goroutine returns as soon as the writer
// has let go of the response (post_letgo.go).

// errClientLeft ends a POST request whose client closed its connection,
// when the request's context is not the client's (clientGone): a
// resumable one's response, or a request detachedContext detached. It is
// a context.Canceled, the cause a context derived from the client's would
// have ended with (whatever ended the client's context: its leaving, a
// middleware's cancel, the server's close).
var errClientLeft = fmt.Errorf("the client closed its connection: %w", context.Canceled)

// resumablePost reports whether a request's SSE response is recorded and
// resumable.
func (h *Handler) resumablePost(sess *session, batch *batchResponse, feed *listenFeed) bool {
	return h.cfg.EventLog != nil && batch == nil && feed == nil && !sess.modern && !sess.stateless
}

// runResumable runs a request whose response is resumable on a worker
// goroutine, for a response that only its handler's return can end (not
// net/http's HTTP/1, whose requests run on their handler goroutine:
// runResumableInline). The worker is counted as its session's work
// (termination and Shutdown wait for it and cancel it), with a context
// that the client's leaving does not cancel once an event id went out to
// it. This goroutine returns when the request has answered or the writer
// let go of the response, whichever comes first; it never touches the
// response after that.
func (h *Handler) runResumable(w http.ResponseWriter, r *http.Request, sess *session, env *envelope, body []byte) {
	p, ok := h.beginResumable(w, r, sess, env, nil)
	if !ok {
		return
	}
	// The worker reads env only for mcp.server.operation.duration: a copy
	// on the heap when that is recorded, none otherwise.
	var op *envelope
	if h.met.opTimed() {
		e := *env
		op = &e
	}
	done := make(chan struct{})
	stop := p.watchClient(r)
	go func() {
		defer close(done)
		defer p.endWork()
		defer p.cancel(nil)
		p.run(body, op)
		p.returned()
	}()
	select {
	case <-done:
	case <-p.released:
	}
	p.unwatchClient(stop)
}

// beginResumable makes a resumable request's postStream and counts it as
// its session's work; srv, when set, is the server whose handler goroutine
// runs it (post_inline.go). Only the HTTP request's end is left out of its context: what
// ContextFunc derives (a deadline included) applies. It answers the
// request itself and reports false when the session refused the work.
func (h *Handler) beginResumable(w http.ResponseWriter, r *http.Request, sess *session, env *envelope, srv *http.Server) (*postStream, bool) {
	ctx, span := h.startRequestSpan(h.requestContext(context.WithoutCancel(r.Context()), r), r, sess, env)
	ctx, cancel := context.WithCancelCause(ctx)
	p := &postStream{h: h, w: w, ctx: ctx, cancel: cancel, sess: sess, id: env.ID, traced: span != nil,
		resumable: true, srv: srv}
	if srv == nil {
		p.makeReleaseChannels() // the handler goroutine waits on released
	} else {
		// A client that asked to close, or speaks HTTP/1.0, is not given
		// its connection back.
		p.chunked = r.ProtoAtLeast(1, 1)
		p.keepConn = p.chunked && !r.Close
	}
	// Ready before beginWork makes it visible to a drain (releaseRunning).
	p.prepare()
	if f := sess.beginWork(p); f != nil {
		cancel(nil)
		endSpanFailed(span, f)
		h.writeFailure(w, f.forRequest(env.ID))
		return nil, false
	}
	return p, true
}

// watchClient runs clientGone when r's client leaves (or its handler
// returns), until unwatchClient is given the stop it returns.
func (p *postStream) watchClient(r *http.Request) (stop func() bool) {
	p.clientWatch.Add(1)
	return context.AfterFunc(r.Context(), p.clientLeft)
}

// clientLeft is watchClient's function.
func (p *postStream) clientLeft() {
	defer p.clientWatch.Done()
	p.clientGone()
}

// unwatchClient stops watchClient's watch and waits for a clientGone that
// runs already (its client left as the request answered): it touches the
// response, so it ends before the handler does.
func (p *postStream) unwatchClient(stop func() bool) {
	if stop() {
		p.clientWatch.Done()
	}
	p.clientWatch.Wait()
}

// makeReleaseChannels makes the channels of a let-go, once: when the
// request's writer starts (a response answered with plain JSON needs
// none), or at once for a request on a worker. Callers hold p.mu, or own p
// alone.
func (p *postStream) makeReleaseChannels() {
	if p.resumable && p.released == nil {
		p.releaseWake, p.released, p.releaseRefused = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	}
}

// returned is what a resumable request does once it has answered, on the
// goroutine that ran it.
func (p *postStream) returned() {
	if p.stream != "" && p.behind == nil { // named by the writer, which run joined
		p.h.postSignals.add(p.signal, -1, 0) // after the answer was recorded (else by endWork, once it is)
	}
	p.stopDetached()
	if p.letGone { // set by the writer, which run joined
		p.sess.endLetGo()
	}
}

// sendRecorded records msgs on the request's stream, then writes them with
// their ids, in one write. A write that fails ends the response but not the
// request once an id went out: what it sends is recorded for the client's
// resume. Before that, the client cannot resume, and the request is
// cancelled as it would be without a log.
func (p *postStream) sendRecorded(msgs [][]byte) {
	p.name()
	// A response that opens with msgs primes with an id recorded before
	// theirs: a client that got only the priming event resumes from it and
	// is replayed msgs. The priming event and msgs are recorded in one
	// call (one round trip, with a log in Redis).
	priming := p.sse == nil && primes(p.sess.ProtocolVersion())
	batch := msgs
	if priming {
		batch = append(make([][]byte, 0, 1+len(msgs)), nil)
		batch = append(batch, msgs...)
	}
	var ids []string
	if p.goesBehind() {
		ids = p.placeIDs(len(batch))
		p.behind = batch // recorded once the request returns (endWork)
	} else {
		ids = p.h.recordAllOn(p.recordParent(), p.sess, p.stream, batch)
	}
	prime := ""
	if priming {
		prime, ids = ids[0], ids[1:]
	}
	all := true
	for _, id := range ids {
		if id == "" {
			all = false
		}
	}
	p.h.postSignals.changedOn(p.signal)
	var written bool
	switch {
	case p.sse == nil:
		written = p.openRecorded(prime, ids, msgs)
	case !p.sse.ended.Load():
		if anyID(ids) {
			p.idOut.Store(true)
		}
		put := func() error { return p.sse.putEventsWithIDs(ids, msgs) }
		if p.last {
			written = p.sse.writeLast(eventsSize(ids, msgs), put) == nil
		} else {
			written = p.sse.write(put) == nil
		}
	}
	p.lastOK = written || all
	if written {
		return
	}
	if !p.idOut.Load() {
		p.lost += len(msgs)
		p.cancel(context.Cause(p.sse.ctx))
		return
	}
	for _, id := range ids {
		if id == "" {
			p.lost++
		}
	}
}

// recordParent is what the request's stores end with: its session, except
// with replicas, where a draining replica's sessions live on elsewhere and
// their requests' answers are recorded to the end (each store bounded by
// the write timeout).
func (p *postStream) recordParent() context.Context {
	if p.h.shared {
		return context.WithoutCancel(p.sess.ctx())
	}
	return p.sess.ctx()
}

func anyID(ids []string) bool {
	for _, id := range ids {
		if id != "" {
			return true
		}
	}
	return false
}

// recordPriming records the priming event of a 2025-11-25 response and
// returns its SSE id ("" for an earlier version, or when the log refused
// it). It is recorded before anything the response then carries, so that
// a resume from it replays all of that.
func (p *postStream) recordPriming(parent context.Context) string {
	if !primes(p.sess.ProtocolVersion()) {
		return ""
	}
	return p.h.recordOn(parent, p.sess, p.stream, nil)
}

// openRecorded turns the response into an SSE stream: a 2025-11-25 one
// opens with a priming event (prime, recorded before msgs: an id, empty
// data) and the retry field, then msgs with their ids, in one write and
// flush; when msgs end with the answer (p.last), in the response's last
// write (openLast).
func (p *postStream) openRecorded(prime string, ids []string, msgs [][]byte) bool {
	p.sse = newSSEStream(p.ctx, p.w, p.h.cfg.WriteTimeout)
	p.sse.met = p.h.met
	p.rs.stream.Store(p.sse)
	p.h.postStreams.Add(1)
	p.h.met.streamOpened(p.streamKind())
	p.sess.addPostStream(p.sse) // squeezed or closed if the session is terminating
	opening := ""
	if prime != "" {
		opening = "id: " + prime + "\nretry: " + strconv.FormatInt(resumeRetry.Milliseconds(), 10) + "\ndata: \n\n"
		p.idOut.Store(true)
	}
	if opening == "" && len(msgs) == 0 {
		opening = ": stream open\n\n"
	}
	if anyID(ids) {
		p.idOut.Store(true)
	}
	put := func() error {
		if err := p.sse.putString(opening); err != nil {
			return err
		}
		return p.sse.putEventsWithIDs(ids, msgs)
	}
	if p.last {
		// The whole response, its answer included (a linger's end:
		// post_linger.go): its last write too.
		return p.sse.openLast(len(opening)+eventsSize(ids, msgs), put) == nil
	}
	return p.sse.open(put) == nil
}

// name names the request's stream in the event log and registers it as
// running here, once: when its response first becomes a stream (a request
// answered with plain JSON costs neither).
func (p *postStream) name() {
	if p.stream != "" {
		return
	}
	p.stream = newPostStreamName(p.id)
	p.signal = signalKey(p.sess.id, p.stream)
	p.h.postSignals.add(p.signal, 1, 0)
}

// aliveMarker records an empty event on the request's stream, at each
// keep-alive: a resumer on another replica tells a request that still runs
// (markers keep coming) from one whose replica died (resume_post.go).
func (p *postStream) aliveMarker() {
	if p.h.recordOn(p.recordParent(), p.sess, p.stream, nil) != "" {
		p.h.postSignals.changedOn(p.signal)
	}
}
