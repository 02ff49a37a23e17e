package streamable

import "github.com/mark3labs/mcp-go/mcp"

// startWriter starts the request's writer goroutine, once: when the request
// first sends a message, or when it has run for a heartbeat interval. It
// does nothing once the request has returned.
func (p *postStream) startWriter() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.stopped {
		return
	}
	p.started = true
	p.makeReleaseChannels()
	p.done = make(chan struct{})
	p.writerDone = make(chan struct{})
	p.h.writers.run(p.write)
}

// stopWriter tells the writer the request has returned and waits for it to
// deliver what is queued and exit.
func (p *postStream) stopWriter() {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	p.mu.Unlock()
	if started {
		close(p.done)
		<-p.writerDone
	}
	p.rs.close()
}

// write is the writer goroutine: it writes what the request sends as SSE
// events, and keep-alive comments every heartbeat interval, until the
// request returns; then it delivers what is still queued and exits.
func (p *postStream) write() {
	defer close(p.writerDone)
	var tick <-chan struct{}
	if p.h.pings() {
		e := p.h.sched.Add(p.h.cfg.HeartbeatInterval)
		defer e.Remove()
		tick = e.Due()
	}
	// The request's queues exist once it first sends something; until then
	// the writer was started by the keep-alive timer and owes a keep-alive.
	var notes chan mcp.JSONRPCNotification
	var reqs chan []byte
	// A listen stream's feed is read once the acknowledgement is out
	// (ackedFeed), so that nothing goes ahead of it.
	var feedWake <-chan struct{}
	ackedFeed := func() {
		if feedWake == nil && p.feed != nil && p.feed.acked {
			feedWake = p.feed.wake
			p.sendFeed()
		}
	}
	ready := p.rs.readySignal()
	select {
	case <-ready:
		notes, reqs = p.rs.queues()
		ready = nil
	default:
		p.keepalive()
	}
	for {
		select {
		case <-ready:
			notes, reqs = p.rs.queues()
			ready = nil
		case n := <-notes:
			p.sendBatch(notes, reqs, p.encodeNote(n), false)
			ackedFeed()
		case m := <-reqs:
			if !p.sess.calls.take(m) {
				m = nil // a request whose caller gave up
			}
			p.sendBatch(notes, reqs, m, m != nil)
		case <-p.lingerOver():
			p.flushHeld()
		case <-feedWake:
			p.sendFeed()
		case <-tick:
			p.flushHeld()
			p.keepalive()
		case <-p.releaseWake:
			// What the request sent before the let-go was asked for
			// (CloseSSEStream after a notification, say) goes out
			// before the response ends, whichever the select took
			// first.
			p.sendBatch(notes, reqs, nil, false)
			p.flushHeld()
			p.letGo()
		case <-p.done:
			// Everything the request sent before it returned is queued by
			// now: deliver it; the handler writes the answer after us,
			// with what the linger still holds (post_linger.go).
			select {
			case <-ready:
				notes, reqs = p.rs.queues()
			default:
			}
			p.sendBatch(notes, reqs, nil, false)
			p.leaveHeldToAnswer()
			ackedFeed()
			if feedWake != nil {
				p.sendFeed()
			}
			return
		}
	}
}

// maxBatch bounds how many queued messages the writer puts in one write.
const maxBatch = 64

// sendBatch writes first (if not nil; firstIsRequest when it is a request
// to the client) and every message already queued, up to maxBatch per
// write, in order of arrival within each queue, with one write and flush
// per batch instead of one per message (deliver: a resumable response
// may hold notifications back before it opens).
func (p *postStream) sendBatch(notes chan mcp.JSONRPCNotification, reqs chan []byte, first []byte, firstIsRequest bool) {
	batch := make([][]byte, 0, 8)
	hasRequest := false
	if first != nil {
		batch = append(batch, first)
		hasRequest = firstIsRequest
	}
	for {
		select {
		case n := <-notes:
			if b := p.encodeNote(n); b != nil {
				batch = append(batch, b)
			}
		case m := <-reqs:
			if p.sess.calls.take(m) {
				batch = append(batch, m)
				hasRequest = true
			}
		default:
			// Called after a receive, so something was taken (even if
			// it did not encode), or to drain the queues before the
			// response ends: a waiting sender has room either way.
			p.rs.madeRoom()
			if len(batch) > 0 {
				p.deliver(batch, hasRequest)
			}
			return
		}
		if len(batch) == maxBatch {
			p.rs.madeRoom()
			p.deliver(batch, hasRequest)
			batch, hasRequest = batch[:0], false
		}
	}
}

// sent records, for the server-to-client requests among msgs, whether the
// write that carried them went through: written, or lost with the stream
// (a request's stream is not carried over).
func (p *postStream) sent(msgs [][]byte) {
	ok := p.sse != nil && !p.sse.ended.Load()
	if p.resumable {
		ok = p.lastOK // recorded: a resume delivers it
		p.letGoIfEnded()
	}
	for _, m := range msgs {
		if ok {
			p.sess.calls.wrote(m)
		} else {
			p.sess.calls.lost(m)
		}
	}
}

// encodeNote encodes a notification the request sent; on a listen stream,
// the acknowledgement marks the feed readable once written (the writer
// sends it before it reads the feed).
// A listen stream carries nothing else the request sends (a hook's log
// message, say): only the acknowledgement, what the filter asks for, and
// the final result.
func (p *postStream) encodeNote(n mcp.JSONRPCNotification) []byte {
	if p.feed != nil {
		if n.Method != string(mcp.MethodNotificationSubscriptionsAcknowledged) {
			p.h.log.Debug("lifeline: a listen stream carries no notification of its own request; dropped", "method", n.Method)
			return nil
		}
		p.feed.acked = true
	}
	return p.h.encodeNotification(p.sess.id, n)
}
