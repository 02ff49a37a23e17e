package streamable

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

// The life of an admitted GET stream (get.go admits it): opened (or
// resumed), then writing what is sent to its session until it ends, then
// let go of. Each stage has a frame of its own, so that the goroutine of an
// idle stream waits with little of its stack in use (ARCHITECTURE.md,
// section 4).

// runGet serves an admitted GET stream until it closes, then frees the
// session's stream slot.
func (h *Handler) runGet(g *getStream) {
	h.getStreams.Add(1)
	h.met.streamOpened(streamGet)
	defer h.endGet(g)
	notes, late, reqs, ok := h.startGet(g)
	if ok {
		h.getLoop(g, notes, late, reqs)
	}
}

// endGet is what a GET stream does as its handler exits: it closes and
// lets go of the stream (the lease before the slot), and, last, ends a
// session that ended on another replica.
func (h *Handler) endGet(g *getStream) {
	sess := g.sess
	bus := g.clusterBus()
	g.close(errStreamClosed)
	bus.stopRenew(g) // g.close cancelled its renewal; the lease it returns is released below
	sess.calls.forgetPings(g)
	// The lease goes before the slot, so a GET that finds the slot
	// free also finds the lease free.
	if err := h.store.ReleaseStream(context.WithoutCancel(g.ctx), g.lease); err != nil {
		h.log.Warn("lifeline: release stream lease", "session", logID(sess.id), "err", err)
	}
	// With replicas, only now that no pump sees this stream as the
	// holder: stop listening to the session's bus, and keep what was
	// sent to the stream and not written, for the next stream; its own
	// topic is read a moment longer, for what pumps that read the
	// lease before its release send it (cluster_linger.go).
	l, lingers := h.freeSlot(g)
	if g.cl != nil {
		g.cl.subs.session.Close()
		if lingers {
			h.lingerTopic(sess, g.cl.subs.stream, l)
		} else {
			h.closeTopic(sess, g.cl.subs.stream) // Shutdown has begun
		}
	}
	if h.shared {
		// The client may reconnect on another replica: what is left
		// here, or sent as this stream ended, is forwarded to it once
		// it does (an idle pump exits after pumpIdle).
		sess.ensurePump(false)
	}
	h.getStreams.Add(-1)
	h.traceGetEnd(g)
	h.met.streamClosed(streamGet)
	g.markExited()
	if g.beat != nil {
		g.beat.Remove()
	}
	// Once the stream is gone: a session that ended on another replica
	// ends here too.
	if bus.endedInStore() {
		sess.terminate(context.Background(), sess.endedInStoreCause())
	}
}

// startGet opens g (or replays what its client missed) and writes what
// the session carried over for it, and returns the session's queues as
// they are. It reports false when the stream ended meanwhile. It is not
// inlined: its frame is gone by the time the stream waits (getLoop), so
// that an idle stream's goroutine uses little enough of its stack for the
// runtime to shrink it.
//
//go:noinline
func (h *Handler) startGet(g *getStream) (notes, late chan mcp.JSONRPCNotification, reqs chan []byte, ok bool) {
	sess := g.sess
	if g.cl != nil { // with replicas: the session's bus (cluster_get.go)
		bus := &g.cl.bus
		bus.msgs = g.cl.subs.session.Messages()
		bus.stream = g.cl.subs.stream.Messages()
		bus.startRenew(h, g)
	}
	// The stream's headers say no more than they must: each one costs
	// every idle stream memory (here and in the client), and the client
	// knows its session.
	if g.resume != nil {
		// Resuming: what the stream sent after the client's cursor first.
		if stream, _, ok := splitEventID(g.resume.from); !ok || stream != getStreamID || !validEventID(g.resume.from) {
			h.freshStream(g, "it is not an id this transport issues")
			if err := h.openGet(g); err != nil {
				if !g.begun() {
					h.writeFailure(g.w, h.goneAnswer())
				}
				return nil, nil, nil, false
			}
		} else if !h.replay(g) {
			return nil, nil, nil, false
		}
	} else if err := h.openGet(g); err != nil {
		if !g.begun() {
			// Closed (by DELETE or Shutdown) before it began.
			h.writeFailure(g.w, h.goneAnswer())
		}
		return nil, nil, nil, false
	}
	// The session's queues are made when something is first sent to it;
	// an idle stream is woken for that instead of making them.
	if q := sess.q.Load(); q != nil {
		notes, reqs, late = q.notifications, q.requests, sess.lateQueue()
	}
	carry := sess.takeCarry()
	if g.resume != nil {
		carry = sess.resumeCarried(carry, g.resume.replayed) // the replay sent what was recorded
	}
	for i, c := range carry {
		if !sess.calls.take(c.msg) {
			continue // a request whose caller gave up
		}
		if c.id == "" {
			c.id = h.record(sess, c.msg)
		}
		if err := g.eventWithID(c.id, c.msg); err != nil {
			sess.writeFailed(c, err)
			for _, c := range carry[i+1:] {
				sess.keep(c)
			}
			return nil, nil, nil, false
		}
		sess.calls.wrote(c.msg)
	}
	return notes, late, reqs, true
}

// getLoop writes what is sent to g's session, its heartbeats and what
// other replicas forward to it, until the stream ends.
func (h *Handler) getLoop(g *getStream, notes, late chan mcp.JSONRPCNotification, reqs chan []byte) {
	sess := g.sess
	bus := g.clusterBus() // nil without replicas
	for {
		var msg []byte
		attempts := 0     // how many streams already failed to write msg
		forwardedID := "" // its event id, when another replica recorded it
		// A send that raced the queues' making is read once they are
		// empty: the sender's earlier messages are in them (idle_queue.go).
		lateNow := late
		if len(notes) > 0 {
			lateNow = nil
		}
		select {
		case <-g.ctx.Done():
			return
		case n := <-notes:
			if msg = h.encodeNotification(sess.id, n); msg == nil {
				continue
			}
		case n := <-lateNow:
			if msg = h.encodeNotification(sess.id, n); msg == nil {
				continue
			}
		case msg = <-reqs:
			if !sess.calls.take(msg) {
				continue // a request whose caller gave up
			}
		case <-g.wake:
			if g.ended.Load() {
				return
			}
			if notes == nil {
				if q := sess.q.Load(); q != nil {
					notes, reqs, late = q.notifications, q.requests, sess.lateQueue()
				}
			}
			if g.beat == nil || !g.beat.Fired() {
				continue
			}
			if g.tracker.Dead() && !bus.storeDown() {
				if g.closeFirst(errDeadPeer) { // not already closed by a takeover, which counted it
					h.log.Warn("lifeline: closing a GET stream whose client stopped answering pings (peer dead)",
						"session", logID(sess.id), "unanswered_pings", g.tracker.Unanswered())
					h.met.deadPeer()
				}
				return
			}
			if h.pings() && h.ping(g) != nil {
				return
			}
			if h.shared {
				continue // the lease is renewed on its own timer (cluster_lease.go)
			}
			l, err := h.renewLease(g, g.lease)
			if err != nil {
				h.log.Warn("lifeline: stream lease lost; closing the stream", "session", logID(sess.id), "err", err)
				return
			}
			g.lease = l
			continue
		case m, ok := <-bus.streamMessages():
			// Addressed to this stream by a pump on another replica.
			if !ok {
				bus.stream = nil
				h.busClosed(g, bus)
				return
			}
			h.met.received()
			c := decodeForwarded(m)
			msg, attempts, forwardedID = c.msg, c.attempts, c.id
		case m, ok := <-bus.sessionMessages():
			if !ok {
				h.busClosed(g, bus)
				return
			}
			h.met.received()
			if msg = h.onBusFrame(g, bus, m); msg == nil {
				if bus.failed {
					return
				}
				continue
			}
		case <-bus.pongs():
			h.answerProbe(g, bus)
			continue
		case <-bus.probeTimer():
			if h.reprobe(g, bus) != nil {
				return
			}
			continue
		}
		id := forwardedID // recorded on the replica whose stream failed to write it
		if id != "" && g.resume.sent(id) {
			if sess.calls.take(msg) {
				sess.calls.wrote(msg) // the replay has just sent it
			}
			continue
		}
		if id == "" {
			id = h.record(sess, msg)
		}
		if err := g.eventWithID(id, msg); err != nil {
			sess.writeFailed(carried{msg: msg, attempts: attempts, id: id}, err)
			return
		}
		sess.calls.wrote(msg)
	}
}
