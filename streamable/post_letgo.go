package streamable

import (
	"context"
	"errors"
	"time"
)

// Letting go of a resumable POST response (post_resume.go): once an event
// id went out, the response may end before the request does, when its
// client left, the handler asked (CloseSSEStream) or the replica drains.
// The writer lets go of it (letGo): the request runs on, bounded by the
// session's idle TTL (detach), and its client resumes its stream with
// Last-Event-ID. A session has at most maxLetGoRequests requests let go of.

// errReleased ends a POST response that the transport let go of: the
// client resumes the request's stream with Last-Event-ID.
var errReleased = errors.New("the response was ended for the client to resume it")

// errNotResumed cancels a request whose response was let go of and that
// ran on for a whole idle TTL after that with no resumer on this replica
// following its stream when the TTL ran out.
var errNotResumed = errors.New("the request ran for the session's idle TTL after its response was ended, and no client followed its stream")

// maxLetGoRequests bounds the requests of one session that run on after
// their response was let go of, with no connection of their client: one
// resumer each (maxResumedStreams). Past it, a request is not let go of:
// one whose response ended is cancelled, as without a log.
const maxLetGoRequests = maxResumedStreams

// errTooManyLetGo cancels a request whose response ended while its session
// had maxLetGoRequests requests let go of.
var errTooManyLetGo = errors.New("the response ended while the session had as many requests let go of (running on for their clients to resume) as it may: the request ends with it")

// releaseRunning asks each running request of a draining session whose
// response is resumable to let go of it (its writer does, once an id
// went out), so that its client resumes on another replica while the
// request finishes here.
func (s *session) releaseRunning() {
	s.mu.Lock()
	var running []*postStream
	for p := s.running; p != nil; p = p.nextWork {
		if p.resumable {
			running = append(running, p)
		}
	}
	s.mu.Unlock()
	for _, p := range running {
		p.askRelease()
	}
}

// beginLetGo counts a request let go of in, unless the session has
// maxLetGoRequests already.
func (s *session) beginLetGo() bool { return s.takeBounded(&s.letGo, maxLetGoRequests) }

// endLetGo counts a request let go of out, once it has returned.
func (s *session) endLetGo() { s.giveBounded(&s.letGo) }

// clientGone runs when the request's HTTP request ends: its client left (or
// the handler returned, when it does nothing). A client that got an event
// id may resume: the response is closed and let go of, the request goes
// on. One that did not cannot: the request is cancelled.
func (p *postStream) clientGone() {
	if !p.idOut.Load() {
		p.cancel(errClientLeft)
		return
	}
	if st := p.rs.stream.Load(); st != nil {
		st.close(errClientLeft)
	}
	p.askRelease()
}

// askRelease asks the request's writer to let go of the response, starting
// it if need be (nothing happens once the request has returned: it answers
// on its own).
func (p *postStream) askRelease() {
	p.startWriter()
	p.mu.Lock()
	wake := p.releaseWake
	p.mu.Unlock()
	select {
	case wake <- struct{}{}: // nil, never, when the writer did not start
	default:
	}
}

// letGo, on the writer goroutine, ends the response for the client to
// resume: it opens it first (with its priming event) if it has not begun,
// and does nothing if no id can reach the client (a version before
// 2025-11-25 whose response carried nothing yet: it stays).
func (p *postStream) letGo() {
	if p.letGone {
		return
	}
	if p.sse == nil {
		if !primes(p.sess.ProtocolVersion()) {
			return
		}
		p.name()
		p.openRecorded(p.recordPriming(p.recordParent()), nil, nil)
	}
	if !p.idOut.Load() {
		return
	}
	if !p.sess.beginLetGo() {
		p.refuseLetGo()
		return
	}
	conn, early, ok := p.takeConnection()
	if !ok {
		p.sess.endLetGo()
		p.refuseLetGo()
		return
	}
	clean := !p.sse.ended.Load()
	p.sse.close(errReleased)
	p.detach()
	p.hangUp(conn, early, clean)
}

// refuseLetGo, on the writer goroutine, answers a let-go that the
// session's bound refuses: a request whose response has ended is
// cancelled (its client cannot follow it); one whose response lives keeps
// it, and a waiting CloseSSEStream is told.
func (p *postStream) refuseLetGo() {
	if p.sse.ended.Load() {
		p.cancel(errTooManyLetGo)
		return
	}
	select {
	case p.releaseRefused <- struct{}{}:
	default:
	}
}

// detach, on the writer goroutine, marks the response let go of: the
// handler goroutine returns, and the request, now running on its own, is
// bounded by the session's idle TTL from here (cancelled past it, its
// error answer recorded), so that a request no client comes back for
// cannot keep its session alive forever.
func (p *postStream) detach() {
	p.letGone = true
	if ttl := p.h.cfg.IdleTTL; ttl > 0 {
		p.mu.Lock()
		p.detached = time.AfterFunc(ttl, p.idleDetached)
		p.mu.Unlock()
	}
	close(p.released)
}

// idleDetached runs an idle TTL after the response was let go of: it
// cancels the request, unless a resumer on this replica follows its
// stream, in which case it looks again one idle TTL later.
func (p *postStream) idleDetached() {
	if p.h.postSignals.watched(p.signal) {
		p.mu.Lock()
		if !p.detachedDone {
			p.detached.Reset(p.h.cfg.IdleTTL)
		}
		p.mu.Unlock()
		return
	}
	p.cancel(errNotResumed)
}

// stopDetached stops the idle-TTL bound of a request that has returned.
func (p *postStream) stopDetached() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.detachedDone = true
	if p.detached != nil {
		p.detached.Stop()
	}
}

// letGoIfEnded lets go of a response whose write failed after an id went
// out: the handler goroutine need not wait for the request.
func (p *postStream) letGoIfEnded() {
	if !p.letGone && p.sse != nil && p.sse.ended.Load() && p.idOut.Load() {
		if !p.sess.beginLetGo() {
			p.cancel(errTooManyLetGo)
			return
		}
		conn, _, _ := p.takeConnection() // the stream has ended: let go of even without it
		p.sse.close(errReleased)         // no write may follow: the handler returns
		p.detach()
		p.hangUp(conn, nil, false)
	}
}

// releaseNow asks the writer to let go of the response and waits, at most
// the write timeout, until it has. It reports whether it did.
func (p *postStream) releaseNow(ctx context.Context) bool {
	p.mu.Lock()
	refused := p.releaseRefused
	p.mu.Unlock()
	select {
	case <-refused: // an earlier refusal (nil, never, before the writer)
	default:
	}
	p.askRelease()
	p.mu.Lock()
	exited, released, refused := p.writerDone, p.released, p.releaseRefused
	p.mu.Unlock()
	if exited == nil {
		return false // the request has returned: its answer goes on the response
	}
	t := time.NewTimer(p.h.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case <-released:
		return true
	case <-refused:
	case <-exited:
	case <-ctx.Done():
	case <-t.C:
	}
	select {
	case <-released:
		return true
	default:
		return false
	}
}
