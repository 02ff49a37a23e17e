package streamable

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// pumpIdle is how long a pump waits for more messages before it exits. mcp-go
// announces each send (UpgradeToSSEWhenReceiveNotification) just before
// making it, so a pump never exits between an announcement and its send.
const pumpIdle = 250 * time.Millisecond

// maxPumpBackoff bounds the wait between a pump's attempts to forward a
// message while no replica holds the session's stream.
const maxPumpBackoff = 2 * time.Second

// pumpState is a session's pump, guarded by session.mu.
type pumpState struct {
	done     chan struct{} // closed when the running pump has exited; nil when none runs
	stop     chan struct{} // closed to make it hand over and exit
	held     int           // messages it has taken and not forwarded yet
	lastSend time.Time     // when mcp-go last announced a send
}

// ensurePump starts the session's pump unless one runs or this replica holds
// the session's GET stream (whose handler writes the queues itself).
// announced is true when mcp-go is about to send a notification.
//
// The pump is the one goroutine, per session and only while there is
// something to forward, that takes messages bound for the GET stream off the
// session's queues on a replica that does not hold the stream, and
// publishes them, in order, on the session's bus, addressed to the stream
// that holds the session's lease. While no replica holds the stream it
// keeps them (at most QueueSize; then the queues fill and sends are refused
// as usual) and retries, backing off to maxPumpBackoff, so a message waits
// for the client's next GET wherever it lands. It exits when nothing is
// held and the queues stay empty for pumpIdle; when a GET on this replica
// claims the stream (stopPump: what it holds goes to the carry-over, ahead
// of the queues); and when the session ends, which waits for it. While this
// replica drains (cluster_drain.go) it goes on forwarding what the running
// requests send, and hands what it holds over when the drain ends.
func (s *session) ensurePump(announced bool) {
	if s.rep == nil {
		return // no replicas to forward to (callers check h.shared)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if announced {
		s.rep.pump.lastSend = time.Now()
	}
	if s.rep.pump.done != nil || s.get != nil || (!s.active() && !s.draining()) {
		return
	}
	s.rep.pump.done = make(chan struct{})
	s.rep.pump.stop = make(chan struct{})
	go s.runPump(s.rep.pump.done, s.rep.pump.stop)
}

// stopPump makes a running pump hand what it holds over to the carry-over
// and exit, and waits for it (bounded by the cleanup timeout; its store
// calls are bounded too). Callers hold s.life and have set s.get, so no
// pump starts meanwhile.
func (s *session) stopPump() {
	if s.rep == nil {
		return // no replicas, no pump
	}
	s.mu.Lock()
	done := s.rep.pump.done
	if s.rep.pump.stop != nil {
		close(s.rep.pump.stop)
		s.rep.pump.stop = nil // closed once: a later claim only waits
	}
	s.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(s.h.cfg.CleanupTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.h.log.Error("lifeline: the session's pump did not stop within the cleanup timeout", "session", logID(s.id))
	}
}

func (s *session) runPump(done, stop chan struct{}) {
	defer close(done)
	idle := time.NewTimer(pumpIdle)
	defer idle.Stop()
	// pending holds the messages taken off the queues (or left over by a
	// stream that failed here) and not yet forwarded, oldest first.
	pending := s.takeCarry()
	s.setHeld(len(pending))
	backoff := pumpIdle
	// The session's end stops the pump, unless this replica is draining:
	// the session lives on elsewhere and the running requests here still
	// send to it, so it goes on until the drain ends (drainEnd).
	sctx := s.ctx()
	ended, fwdCtx := sctx.Done(), sctx
	var drainEnd <-chan struct{}
	if s.draining() {
		ended, drainEnd, fwdCtx = nil, s.h.drainEnd, context.WithoutCancel(sctx)
	}
	for {
		// What reached the carry-over since (an ended stream's lingering
		// topic keeps what arrives there) goes first: it is older.
		if c := s.takeCarry(); len(c) > 0 {
			pending = append(c, pending...)
		}
		// Requests whose callers gave up are not forwarded, nor held.
		pending = s.calls.prune(pending)
		for len(pending) > 0 {
			if m := pending[0].msg; s.calls.take(m) {
				if !s.forward(fwdCtx, encodeForwarded(pending[0])) {
					if s.calls.keepAfterFailure(m) {
						break // first in line for the next try
					}
					// Its caller gave up meanwhile: dropped.
				} else {
					s.calls.wrote(m)
					backoff = pumpIdle
				}
			}
			pending = pending[1:]
			s.setHeld(len(pending))
		}
		var retry <-chan time.Time
		if len(pending) > 0 {
			// No replica holds the stream, or the store failed: retry,
			// slower and slower, until one does or the session ends.
			retry = time.After(backoff)
			backoff = min(2*backoff, maxPumpBackoff)
		}
		// The queues exist once something was sent to the session; a
		// pump started by a stream's end waits for that instead of
		// making them.
		var notes chan mcp.JSONRPCNotification
		var reqs chan []byte
		made := s.qMade
		if q := s.q.Load(); q != nil {
			notes, reqs, made = q.notifications, q.requests, nil
		}
		if len(pending) >= s.h.cfg.QueueSize {
			// Hold no more than a queue's worth: the queues fill up, and
			// sends are refused as when a stream's client stops reading.
			notes, reqs = nil, nil
		}
		select {
		case <-stop:
			s.handOver(done, pending)
			return
		case <-ended:
			if s.draining() {
				ended, drainEnd = nil, s.h.drainEnd
				fwdCtx = context.WithoutCancel(sctx) // each forward bounded by the cleanup timeout
				continue
			}
			// What it holds stays in the carry-over: a drain that just
			// ended forwards or records it (flushDrained); otherwise the
			// session is gone with it.
			s.handOver(done, pending)
			return
		case <-drainEnd:
			s.handOver(done, pending)
			return
		case n := <-notes:
			if b := s.h.encodeNotification(s.id, n); b != nil {
				pending = append(pending, carried{msg: b})
			}
		case m := <-reqs:
			pending = append(pending, carried{msg: m})
		case <-retry:
			continue
		case <-made:
			continue
		case <-idle.C:
			if len(pending) == 0 && s.pumpMayExit(done) {
				return
			}
			idle.Reset(pumpIdle)
			continue
		}
		s.setHeld(len(pending))
		idle.Reset(pumpIdle)
	}
}

func (s *session) setHeld(n int) {
	s.mu.Lock()
	s.rep.pump.held = n
	s.mu.Unlock()
}

// pumpMayExit ends the pump if nothing is queued and no send was announced
// within pumpIdle.
func (s *session) pumpMayExit(done chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queuedInQueues() > 0 || len(s.carry) > 0 || time.Since(s.rep.pump.lastSend) < pumpIdle {
		return false
	}
	s.clearPumpLocked(done)
	return true
}

// handOver puts what the pump holds ahead of the carry-over, for the GET
// that claimed the stream here, and ends the pump.
func (s *session) handOver(done chan struct{}, pending []carried) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carry = append(pending, s.carry...)
	s.clearPumpLocked(done)
}

func (s *session) clearPumpLocked(done chan struct{}) {
	if s.rep.pump.done == done {
		s.rep.pump.done, s.rep.pump.stop, s.rep.pump.held = nil, nil, 0
	}
}

// forward publishes msg for the stream holding the session's lease on
// another replica, addressed to that holder (a stream that lost the lease
// ignores it). It reports false, leaving msg to the caller, when no other
// replica holds the stream, when nobody listens on the session's bus (the
// holder died and its lease has not lapsed yet), or when the store fails.
// Its store calls are bounded by the cleanup timeout and end with parent.
func (s *session) forward(parent context.Context, msg []byte) bool {
	ctx, cancel := context.WithTimeout(parent, s.h.cfg.CleanupTimeout)
	defer cancel()
	lease, held, err := s.h.store.StreamHolder(ctx, s.id)
	if err == nil && held && !s.h.isLocalHolder(lease.Holder) {
		if err = s.h.store.PublishTopic(ctx, s.id, lease.Holder, msg); err == nil {
			return true
		}
	}
	if err != nil && parent.Err() == nil && !isGone(err) {
		s.h.log.Debug("lifeline: forwarding a message to the stream's replica failed; kept for a retry",
			"session", logID(s.id), "err", err)
	}
	return false
}
