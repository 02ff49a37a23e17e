package streamable

import (
	"context"
	"time"
)

// pumpIdle is how long a pump waits for more messages before it exits. mcp-go
// announces each send (UpgradeToSSEWhenReceiveNotification) just before
// making it, so a pump never exits between an announcement and its send.
const pumpIdle = 250 * time.Millisecond

// ensurePump starts the session's pump unless one runs or this replica holds
// the session's GET stream (whose handler writes the queues itself).
// announced is true when mcp-go is about to send a notification.
//
// The pump is the one goroutine, per session and only while there is
// something to forward, that takes messages bound for the GET stream off the
// session's queues on a replica that does not hold the stream, and
// publishes them, in order, on the session's bus for the replica that does.
// While no replica holds the stream it keeps them and retries (backing off
// to maxPumpBackoff), so a message waits for the client's next GET wherever
// it lands. It exits when nothing is pending and the queues stay empty for
// pumpIdle, when a GET on this replica takes over the queues, and when the
// session ends, which waits for it.
func (s *session) ensurePump(announced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if announced {
		s.lastSend = time.Now()
	}
	if s.pumpDone != nil || s.get != nil || !s.active() {
		return
	}
	done := make(chan struct{})
	s.pumpDone = done
	go s.pump(done)
}

func (s *session) pump(done chan struct{}) {
	defer close(done)
	idle := time.NewTimer(pumpIdle)
	defer idle.Stop()
	// pending holds the messages taken off the queues (or left over by a
	// stream that failed here) and not yet forwarded, oldest first.
	pending := s.takeCarry()
	backoff := pumpIdle
	for {
		if s.liveGet() != nil {
			// A GET on this replica took the stream: it writes the queues,
			// and what is pending goes back to them.
			for _, m := range pending {
				s.giveBack(m)
			}
			s.stopPump(done)
			return
		}
		for len(pending) > 0 && s.forward(pending[0]) {
			pending = pending[1:]
			backoff = pumpIdle
		}
		var retry <-chan time.Time
		if len(pending) > 0 {
			// No replica holds the stream, or the store failed: retry,
			// slower and slower, until one does or the session ends.
			retry = time.After(backoff)
			backoff = min(2*backoff, maxPumpBackoff)
		}
		select {
		case <-s.ctx.Done():
			s.stopPump(done)
			return
		case n := <-s.notifications:
			if b := s.h.encodeNotification(s.id, n); b != nil {
				pending = append(pending, b)
			}
		case m := <-s.requests:
			pending = append(pending, m)
		case <-retry:
		case <-idle.C:
			if len(pending) == 0 && s.pumpMayExit(done) {
				return
			}
			idle.Reset(pumpIdle)
			continue
		}
		idle.Reset(pumpIdle)
	}
}

// maxPumpBackoff bounds the wait between a pump's attempts to forward a
// message while no replica holds the session's stream.
const maxPumpBackoff = 2 * time.Second

// pumpMayExit ends the pump if nothing is queued and no send was announced
// within pumpIdle.
func (s *session) pumpMayExit(done chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.notifications) > 0 || len(s.requests) > 0 || time.Since(s.lastSend) < pumpIdle {
		return false
	}
	if s.pumpDone == done {
		s.pumpDone = nil
	}
	return true
}

func (s *session) stopPump(done chan struct{}) {
	s.mu.Lock()
	if s.pumpDone == done {
		s.pumpDone = nil
	}
	s.mu.Unlock()
}

// forward publishes msg for the replica holding the session's GET stream.
// It reports false, leaving msg to the caller, when no other replica holds
// the stream or the store fails.
func (s *session) forward(msg []byte) bool {
	ctx, cancel := context.WithTimeout(s.ctx, s.h.cfg.CleanupTimeout)
	defer cancel()
	lease, held, err := s.h.cfg.Store.StreamHolder(ctx, s.id)
	if err == nil && held && !s.h.isLocalHolder(lease.Holder) {
		if err = s.h.cfg.Store.Publish(ctx, s.id, frame(frameStream, msg)); err == nil {
			return true
		}
	}
	if err != nil && s.ctx.Err() == nil && !isGone(err) {
		s.h.log.Warn("lifeline: forwarding a message to the stream's replica failed; kept for a retry",
			"session", s.id, "err", err)
	}
	return false
}

// giveBack returns a message the pump took to the session's queue of
// encoded messages, or, if that is full, to its carry-over.
func (s *session) giveBack(msg []byte) {
	select {
	case s.requests <- msg:
	default:
		s.requeue(msg)
	}
}
