package streamable

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// With replicas and a shared event log, Shutdown drains (shutdown.go): the
// sessions live on, on the other replicas, while the requests still
// running here finish. What those requests send to their session's GET
// stream, and what this replica still held for it, must reach that stream
// wherever the client opens it next. So, until the running requests are
// done:
//
//   - a session's pump keeps forwarding to the replica holding its stream
//     (a pump starts as usual when something is sent; runPump);
//   - an ended GET stream's topic lingers as it does outside a drain
//     (cluster_linger.go), for what other replicas' pumps sent it.
//
// Then the drain ends (endDrain): pumps and lingers hand what they hold to
// the carry-over, and flushDrained forwards each session's carry-over and
// queue to the stream's holder, or, when no replica holds the stream,
// records them in the event log as the GET stream's next events, which the
// client's next resume replays.

// drainsToReplicas reports whether Shutdown drains to the other replicas:
// with a shared store and an event log.
func (h *Handler) drainsToReplicas() bool { return h.shared && h.cfg.EventLog != nil }

// draining reports whether s was ended by a Shutdown that drains, and the
// drain goes on.
func (s *session) draining() bool {
	if !s.h.drainsToReplicas() || !errors.Is(s.endedWith(), errShutdown) {
		return false
	}
	select {
	case <-s.h.drainEnd:
		return false
	default:
		return true
	}
}

// lingerEnd is closed when ended streams' topics must stop lingering: when
// the drain ends, or at once when Shutdown does not drain.
func (h *Handler) lingerEnd() <-chan struct{} {
	if h.drainsToReplicas() {
		return h.drainEnd
	}
	return h.stopSweep
}

// endDrain ends the drain once the running requests are done: it stops
// the lingering topics and the pumps, which hand what they hold to the
// carry-over, then flushes each session's carry-over and queue. Bounded
// by ctx, but given at least the cleanup timeout (handOnContext), and
// each store call by the cleanup or write timeout.
func (h *Handler) endDrain(ctx context.Context, sessions []*session) {
	// freeSlot registers a linger under h.mu while the drain goes on; from
	// now on no pump starts, nor linger, for these sessions.
	h.mu.Lock()
	close(h.drainEnd)
	h.mu.Unlock()
	ctx, cancel := h.handOnContext(ctx)
	defer cancel()
	for _, s := range sessions {
		s.mu.Lock()
		linger, pump := s.rep.linger.done, s.rep.pump.done
		s.mu.Unlock()
		for _, done := range []chan struct{}{linger, pump} {
			if done == nil {
				continue
			}
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
		}
		s.flushDrained(ctx)
	}
}

// handOnContext bounds the drain's hand-on: by ctx, but to no less than
// the cleanup timeout from now. A ctx that ended (or nearly) because one
// session's request outlived it must not cost the other sessions, whose
// requests are done, what they hold for their streams.
func (h *Handler) handOnContext(ctx context.Context) (context.Context, context.CancelFunc) {
	floor := time.Now().Add(h.cfg.CleanupTimeout)
	if d, ok := ctx.Deadline(); ctx.Err() == nil && (!ok || d.After(floor)) {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), floor)
}

// flushDrained forwards, in order, what s's carry-over and queues hold to
// the replica holding s's GET stream; what it cannot forward (no replica
// holds the stream, or the store failed) it records in the event log as
// the stream's next events, for the client's next resume to replay.
// Server-to-client requests are not kept: their callers, here, are gone.
func (s *session) flushDrained(ctx context.Context) {
	msgs := s.calls.prune(s.takeCarry())
	for _, notes := range []chan mcp.JSONRPCNotification{s.queuedNotifications(), s.lateQueue()} {
		for more := notes != nil; more; {
			select {
			case n := <-notes:
				if b := s.h.encodeNotification(s.id, n); b != nil {
					msgs = append(msgs, carried{msg: b})
				}
			default:
				more = false
			}
		}
	}
	if len(msgs) == 0 {
		return
	}
	sent := 0
	for _, c := range msgs {
		if !s.forward(ctx, encodeForwarded(c)) {
			break
		}
		sent++
	}
	recorded, lost := 0, 0
	for _, c := range msgs[sent:] {
		switch {
		case c.id != "": // in the log already
		case s.h.recordOn(ctx, s, getStreamID, c.msg) != "":
			recorded++
		default:
			lost++
		}
	}
	if lost > 0 {
		s.h.log.Warn("lifeline: draining: messages for the session's stream could be neither forwarded nor recorded",
			"session", logID(s.id), "lost", lost)
	}
	s.h.log.Debug("lifeline: draining: the session's stream messages handed on",
		"session", logID(s.id), "forwarded", sent, "recorded", recorded, "lost", lost)
}

// queuedNotifications is the session's notification queue, or nil before
// anything was sent to it.
func (s *session) queuedNotifications() chan mcp.JSONRPCNotification {
	if q := s.q.Load(); q != nil {
		return q.notifications
	}
	return nil
}
