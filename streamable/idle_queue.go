package streamable

import "github.com/mark3labs/mcp-go/mcp"

// A session's GET-stream notifications before it needs its full queues.
//
// mcp-go sends a notification with a non-blocking send to the channel
// NotificationChannel returns, right after calling
// UpgradeToSSEWhenReceiveNotification, on the sender's goroutine. A session
// with no stream (nor, with replicas, a pump) to read its queues, such as
// one a broadcast reaches that never opened a GET, would otherwise make two
// QueueSize channels for its first message. Instead NotificationChannel
// gives it small, idleSlots slots, and each UpgradeToSSEWhenReceiveNotification
// first moves what small holds to the held slice (under s.mu), so the send
// that follows finds room: the session holds what it was sent, at most
// QueueSize in all, and refuses more as a full queue does. Once a stream
// claims the session (claimGet) or a send finds one there, the full queues
// are made and take what was held, in order, ahead of what comes next.
//
// A send that fetched small just before the full queues were made lands in
// small afterwards: the next send moves it on (rescueLate) before its own,
// which keeps each sender's order, and the stream reads small too
// (lateQueue), but only while the full notification queue is empty (its
// sender's earlier messages are there), so it is delivered even if nothing
// else is sent.

// idleSlots is the size of small: room for senders racing on one session.
const idleSlots = 4

// idleChannel returns the channel for the next send while the session has
// no full queues: small, made on first use, or the queues if they now exist.
func (s *session) idleChannel() chan<- mcp.JSONRPCNotification {
	s.mu.Lock()
	if q := s.q.Load(); q != nil {
		s.mu.Unlock()
		return q.notifications
	}
	if s.get == nil {
		defer s.mu.Unlock()
		return s.smallLocked()
	}
	// A stream is there: it reads the full queues.
	q, made := s.makeQueuesLocked()
	g := s.get
	s.mu.Unlock()
	if made {
		g.signal()
	}
	return q.notifications
}

func (s *session) smallLocked() chan mcp.JSONRPCNotification {
	if sm := s.small.Load(); sm != nil {
		return *sm
	}
	sm := make(chan mcp.JSONRPCNotification, min(idleSlots, s.h.cfg.QueueSize))
	s.small.Store(&sm)
	return sm
}

// holdIdle prepares the next send of a session without full queues: it
// moves what small holds to held, within QueueSize in all, and counts the
// send as refused when no room is left. It reports false, having made the
// full queues, if a stream waits for them.
func (s *session) holdIdle() bool {
	s.mu.Lock()
	if s.q.Load() != nil || s.get != nil {
		s.mu.Unlock()
		return false
	}
	sm := s.smallLocked()
	limit := s.h.cfg.QueueSize - cap(sm)
move:
	for len(s.held) < limit {
		select {
		case n := <-sm:
			s.held = append(s.held, n)
		default:
			break move
		}
	}
	full := len(sm) == cap(sm)
	s.mu.Unlock()
	if full {
		s.h.refused(s.id, "session", s.h.cfg.QueueSize, false)
	} else {
		s.h.met.queuedMessage()
	}
	return true
}

// makeQueuesLocked makes the full queues if they do not exist yet, moving
// into them what the session held, oldest first. It reports whether it
// made them. Callers hold s.mu.
func (s *session) makeQueuesLocked() (*sessionQueues, bool) {
	if q := s.q.Load(); q != nil {
		return q, false
	}
	q := &sessionQueues{
		notifications: make(chan mcp.JSONRPCNotification, s.h.cfg.QueueSize),
		requests:      make(chan []byte, s.h.cfg.QueueSize),
	}
	for _, n := range s.held {
		q.notifications <- n // held and small never exceed QueueSize together
	}
	s.held = nil
	s.moveSmallLocked(q)
	s.q.Store(q)
	if s.qMade != nil { // nil for an ephemeral session: no pump waits
		close(s.qMade)
	}
	return q, true
}

// claimHeldLocked makes the full queues for a stream that claims the
// session, if it was ever sent anything: what it holds goes first, and a
// send under way (it may have been told to use small) finds the stream
// reading small as well. Callers hold s.mu.
func (s *session) claimHeldLocked() {
	if len(s.held) > 0 || s.small.Load() != nil {
		s.makeQueuesLocked()
	}
}

// rescueLate moves what landed in small after the full queues were made
// into them.
func (s *session) rescueLate(q *sessionQueues) {
	s.mu.Lock()
	lost := s.moveSmallLocked(q)
	s.mu.Unlock()
	if lost > 0 {
		s.h.refused(s.id, "session", cap(q.notifications), false)
	}
}

// moveSmallLocked moves what small holds to q, reporting how many did not
// fit. Callers hold s.mu.
func (s *session) moveSmallLocked(q *sessionQueues) (lost int) {
	sm := s.small.Load()
	if sm == nil {
		return 0
	}
	for {
		select {
		case n := <-*sm:
			select {
			case q.notifications <- n:
			default:
				lost++
			}
		default:
			return lost
		}
	}
}

// lateQueue is small, which a stream reads besides the full queues for
// sends that raced their making; nil if the session never had it.
func (s *session) lateQueue() chan mcp.JSONRPCNotification {
	if sm := s.small.Load(); sm != nil {
		return *sm
	}
	return nil
}
