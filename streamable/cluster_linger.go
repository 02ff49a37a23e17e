package streamable

import (
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// forwardLinger is how long, with replicas, an ended GET stream's own
// topic is still read after the stream released its lease. A pump on
// another replica reads the lease, then publishes to the holder it named:
// a message published in between, or on its way when the stream ended,
// would otherwise reach a subscription being closed and be lost, written
// nowhere and recorded nowhere. What arrives meanwhile is kept for the
// session's next stream (this replica's pump forwards it to the new
// holder). A second covers a store round trip many times over.
const forwardLinger = time.Second

// freeSlot frees the session's stream slot g held and, when g has a topic
// and Shutdown has not begun (or drains, and the drain goes on), registers that topic's linger in the same
// step (under the session's lock), so a GET that claims the slot next
// always finds the linger to stop (stopLinger) and writes what it kept:
// registered later, a linger could start after that GET took the
// carry-over, and keep what arrives where no stream reads it while that
// GET lives. It reports whether the caller must start the linger
// (lingerTopic) once g's bus subscription is closed.
func (h *Handler) freeSlot(g *getStream) (l lingering, ok bool) {
	sess := g.sess
	if g.cl != nil {
		h.mu.Lock()
		if ok = !h.shutting || sess.draining(); ok {
			h.lingers.Add(1)
		}
		h.mu.Unlock()
	}
	var prev lingering
	sess.mu.Lock()
	if sess.get == g {
		sess.get = nil
	}
	if ok {
		prev = sess.rep.linger
		l = lingering{stop: make(chan struct{}), done: make(chan struct{})}
		sess.rep.linger = l
	}
	sess.mu.Unlock()
	if prev.stop != nil {
		close(prev.stop) // one lingers at a time: the newer topic is the one pumps may still name
	}
	return l, ok
}

// lingerTopic reads an ended stream's topic for forwardLinger, keeping
// what arrives, then closes it and keeps what it still holds; l is the
// linger freeSlot registered. Its goroutine ends early when the session
// ends, when a GET on this replica claims the session's stream
// (stopLinger: what it kept is then in the carry-over before that stream
// takes it; later forwards go to that stream's own topic), and when
// Shutdown begins; Shutdown waits for it (freeSlot counted it before
// Shutdown began; once it has, the topic is closed at once instead). A
// Shutdown that drains (cluster_drain.go) ends it, and the session, only
// when the drain ends: until then the session lives on elsewhere.
func (h *Handler) lingerTopic(sess *session, topic sessionstore.Subscription, l lingering) {
	stop, done := l.stop, l.done
	go func() {
		defer h.lingers.Done()
		defer close(done)
		defer func() {
			sess.mu.Lock()
			if sess.rep.linger.done == done {
				sess.rep.linger = lingering{}
			}
			sess.mu.Unlock()
		}()
		defer h.closeTopic(sess, topic)
		t := time.NewTimer(forwardLinger)
		defer t.Stop()
		msgs := topic.Messages()
		// The session's end ends it, unless this replica drains: the
		// session lives on elsewhere, and the linger goes on until the
		// drain ends (lingerEnd).
		ended := sess.ctx().Done()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return
				}
				h.keepForwarded(sess, m)
				sess.ensurePump(false)
			case <-t.C:
				return
			case <-stop:
				return
			case <-ended:
				if sess.draining() {
					ended = nil
					continue
				}
				return
			case <-h.lingerEnd(): // Shutdown began, or its drain ended
				return
			}
		}
	}()
}

// lingering is a session's lingering topic (lingerTopic), if any.
type lingering struct {
	stop chan struct{} // closed to end it early (stopLinger)
	done chan struct{} // closed once it has ended
}

// stopLinger ends the session's lingering topic, if any, and waits for it
// (bounded by the cleanup timeout), so that what it kept is in the
// carry-over. claimGet calls it once the new stream holds the slot (no
// linger is registered meanwhile for this session: only an ending stream
// registers one, as it frees the slot).
func (s *session) stopLinger() {
	if s.rep == nil {
		return // no replicas, no topics
	}
	s.mu.Lock()
	l := s.rep.linger
	if l.stop != nil {
		s.rep.linger.stop = nil
	}
	s.mu.Unlock()
	if l.done == nil {
		return
	}
	if l.stop != nil {
		close(l.stop)
	}
	t := time.NewTimer(s.h.cfg.CleanupTimeout)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
	}
}

// closeTopic closes an ended stream's topic and keeps what it still holds
// for the session's next stream, which the pump forwards it to.
func (h *Handler) closeTopic(sess *session, topic sessionstore.Subscription) {
	topic.Close()
	h.keepUnread(sess, topic.Messages())
	sess.ensurePump(false)
}
