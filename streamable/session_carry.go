package streamable

import (
	"errors"
	"fmt"
)

// maxWriteAttempts bounds how many GET streams try to write one message. A
// message whose write failed on that many streams (a client that never
// takes it whole: it stalls, trickles below minWriteRate, or drops its
// connection each time) is dropped, logged at Warn and counted in
// Stats.DroppedMessages, so that it cannot hold back what is queued
// behind it, nor be resent to the client forever.
const maxWriteAttempts = 3

// carried is a message a GET stream took for its client and did not
// write, kept for the session's next stream, with how many streams tried
// to write it.
type carried struct {
	msg      []byte
	attempts int
	id       string // its event id, when the event log recorded it (resume.go)
}

// requeue keeps a message that a stream took but never tried to write, so
// that the next stream writes it first.
func (s *session) requeue(msg []byte) { s.keep(carried{msg: msg}) }

// keep puts c at the end of the carry-over. It was not written: its caller
// (a server-to-client request's) may still withdraw it.
func (s *session) keep(c carried) {
	if !s.calls.keepAfterFailure(c.msg) {
		return // a request whose caller gave up while it was being written
	}
	s.mu.Lock()
	s.carry = append(s.carry, c)
	s.mu.Unlock()
	s.h.met.carriedMessage()
}

// writeFailed keeps c, whose write on a stream failed with err, for the
// next stream, or drops it once maxWriteAttempts streams have tried it. A
// write the stream refused without trying (it had already ended: err does
// not wrap errWriteFailed) is no attempt.
func (s *session) writeFailed(c carried, err error) {
	if errors.Is(err, errWriteFailed) {
		c.attempts++
	}
	if c.attempts < maxWriteAttempts {
		s.keep(c)
		return
	}
	dropped := fmt.Errorf("lifeline: the request could not be delivered: %d streams failed to write it: %w", c.attempts, err)
	if !s.calls.undeliverable(c.msg, dropped) && s.h.shared {
		s.failRemoteCall(c.msg, dropped) // forwarded here by the replica that issued it
	}
	n := s.h.droppedCount.Add(1)
	s.h.log.Warn("lifeline: dropping a message that no stream could deliver",
		"session", logID(s.id), "bytes", len(c.msg), "attempts", c.attempts, "err", err, "dropped_total", n)
}

func (s *session) takeCarry() []carried {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.carry
	s.carry = nil
	return c
}
