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

// lingerTopic reads an ended stream's topic for forwardLinger, keeping
// what arrives, then closes it and keeps what it still holds. Its
// goroutine ends early when the session ends; Shutdown waits for it, and
// one that would start once Shutdown has begun does not (the topic is
// closed at once).
func (h *Handler) lingerTopic(sess *session, topic sessionstore.Subscription) {
	h.mu.Lock()
	if h.shutting {
		h.mu.Unlock()
		h.closeTopic(sess, topic)
		return
	}
	h.lingers.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.lingers.Done()
		defer h.closeTopic(sess, topic)
		t := time.NewTimer(forwardLinger)
		defer t.Stop()
		msgs := topic.Messages()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return
				}
				sess.keep(decodeForwarded(m))
				sess.ensurePump(false)
			case <-t.C:
				return
			case <-sess.ctx.Done():
				return
			case <-h.stopSweep: // Shutdown began
				return
			}
		}
	}()
}

// closeTopic closes an ended stream's topic and keeps what it still holds
// for the session's next stream, which the pump forwards it to.
func (h *Handler) closeTopic(sess *session, topic sessionstore.Subscription) {
	topic.Close()
	h.keepUnread(sess, topic.Messages())
	sess.ensurePump(false)
}
