package streamable

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// clusterGet is what a GET stream keeps with replicas only: its
// subscriptions and what its handler keeps of the session's bus.
type clusterGet struct {
	bus  busState
	subs streamSubs // the session's bus and the stream's own topic, from before the lease
}

// clusterBus is g's bus state with replicas, nil without. Every busState
// method getLoop and endGet call takes a nil one for a store without
// replicas: no channel ready, nothing to stop.
func (g *getStream) clusterBus() *busState {
	if g.cl == nil {
		return nil
	}
	return &g.cl.bus
}

// busState is what a GET stream's handler keeps of the session's bus, with
// replicas: the subscription's messages and a probe asked for by a GET on
// another replica.
type busState struct {
	msgs   <-chan []byte // the session's bus: replies, probes; closed when the session ends
	stream <-chan []byte // the stream's topic: messages to write

	// A probe in progress: pong closes when the client answers; timer
	// fires when a ping went unanswered for probeWait.
	probing bool
	pong    <-chan struct{} // nil for a client that never answered pings
	timer   *time.Timer
	probes  int

	failed       bool // the stream failed while handling a frame
	sessionEnded bool // the session ended in the store

	// renew renews the stream's lease on its own timer (cluster_lease.go).
	renew *leaseRenewer
}

// startRenew starts renewing g's lease off the stream's goroutine, on a
// schedule of its own (not the heartbeat's), so that neither a slow store
// nor a write blocked on a slow client keeps the lease from being renewed.
func (b *busState) startRenew(h *Handler, g *getStream) {
	b.renew = h.startRenewer(g)
}

// stopRenew stops the renewals, waiting for one in flight, and keeps the
// lease to release. The caller has closed g, which cancels the renewal's
// store calls.
func (b *busState) stopRenew(g *getStream) {
	if b != nil && b.renew != nil {
		g.lease = b.renew.stop()
	}
}

// storeDown reports whether the store is down for the stream's lease
// renewals (or so slow that one is in flight): pongs POSTed to other
// replicas travel through the store, so meanwhile a missing pong says
// nothing about the client.
func (b *busState) storeDown() bool {
	return b != nil && b.renew.storeDown()
}

// endedInStore reports whether the session's bus said it ended in the
// store (busClosed).
func (b *busState) endedInStore() bool {
	return b != nil && b.sessionEnded
}

// streamMessages is the stream topic's channel; nil (never ready) once it
// closed, or without replicas.
func (b *busState) streamMessages() <-chan []byte {
	if b == nil {
		return nil
	}
	return b.stream
}

// sessionMessages is the session bus's channel; nil without replicas.
func (b *busState) sessionMessages() <-chan []byte {
	if b == nil {
		return nil
	}
	return b.msgs
}

// pongs is the probe's pong signal: nil without a probe waiting for one,
// or without replicas.
func (b *busState) pongs() <-chan struct{} {
	if b == nil {
		return nil
	}
	return b.pong
}

func (b *busState) probeTimer() <-chan time.Time {
	if b == nil || !b.probing {
		return nil
	}
	return b.timer.C
}

func (b *busState) stopProbe() {
	b.probing = false
	b.pong = nil
	b.probes = 0
	if b.timer != nil {
		b.timer.Stop()
	}
}

// onBusFrame handles one message from the session's bus on the replica that
// holds the GET stream. It returns a message to write on the stream, or nil.
func (h *Handler) onBusFrame(g *getStream, b *busState, m []byte) []byte {
	if len(m) == 0 {
		return nil
	}
	switch m[0] {
	case frameReply:
		deliverReply(g.sess, m)
	case frameProbe:
		if string(m[1:]) != g.lease.Holder { // not this stream's own probe, sent while it waited
			h.startProbe(g, b)
		}
	}
	return nil
}

// startProbe pings the client at once because a GET on another replica
// found this stream holding the session. A client that answers is alive
// (frameAlive tells the other replica to answer 409); one that answered
// pings before and now misses MissedPongLimit of them is dead, and its
// stream is closed so the other GET can take over. A client that has never
// answered a ping cannot be judged: it is pinged once (a write to a closed
// connection ends the stream) and, if the stream is still up after
// conflictGrace, reported alive.
func (h *Handler) startProbe(g *getStream, b *busState) {
	if b.probing || !h.pings() {
		return
	}
	wait := conflictGrace
	b.pong = nil
	if g.tracker.Answered() {
		b.pong = g.tracker.PongSignal()
		wait = h.probeWait()
	}
	if b.timer == nil {
		b.timer = time.NewTimer(wait)
	} else {
		b.timer.Reset(wait)
	}
	b.probing = true
	b.probes = 1
	if h.ping(g) != nil {
		b.failed = true
	}
}

// answerProbe tells the probing replica that the client answered.
func (h *Handler) answerProbe(g *getStream, b *busState) {
	b.stopProbe()
	ctx, cancel := context.WithTimeout(g.ctx, h.cfg.CleanupTimeout)
	defer cancel()
	err := h.store.Publish(ctx, g.sess.id, []byte{frameAlive})
	if err != nil && !isGone(err) && !errors.Is(err, sessionstore.ErrNoSubscribers) {
		h.log.Warn("lifeline: answering a stream probe", "session", logID(g.sess.id), "err", err)
	}
}

// reprobe pings again after an unanswered probe, or closes the stream once
// MissedPongLimit probes went unanswered.
func (h *Handler) reprobe(g *getStream, b *busState) error {
	if b.pong == nil {
		// A client that never answered pings, still connected.
		h.answerProbe(g, b)
		return nil
	}
	if b.probes < h.cfg.MissedPongLimit {
		b.probes++
		b.timer.Reset(h.probeWait())
		return h.ping(g)
	}
	b.stopProbe()
	if !g.tracker.Dead() {
		return nil
	}
	h.log.Warn("lifeline: closing a dead GET stream for a client reconnecting on another replica (taken over)",
		"session", logID(g.sess.id), "unanswered_pings", g.tracker.Unanswered())
	if g.closeFirst(errTakenOver) { // not already closed as a dead peer by its own heartbeat
		h.met.deadPeer()
		h.met.takeover()
	}
	return errTakenOver
}

// busClosed handles the end of the stream's bus subscription: the session
// was terminated (DELETE on another replica) or expired, or the store
// dropped the subscription. The stream closes either way (a client whose
// session lives reconnects); a session that ended is ended here too.
func (h *Handler) busClosed(g *getStream, b *busState) {
	if h.endedInStore(g.sess.id) {
		g.close(errEndedElsewhere)
		b.sessionEnded = true
		return
	}
	h.log.Warn("lifeline: the session's bus subscription ended; closing the stream", "session", logID(g.sess.id))
}

// streamSubs are a GET stream's subscriptions, with replicas: to the
// session's bus, and to the stream's own topic (its lease holder's name),
// where pumps send the messages it is to write.
type streamSubs struct {
	session, stream sessionstore.Subscription
}

// streamMessages is the stream topic's channel, nil without replicas.
func (s streamSubs) streamMessages() <-chan []byte {
	if s.stream == nil {
		return nil
	}
	return s.stream.Messages()
}

func (s streamSubs) close() {
	if s.session != nil {
		s.session.Close()
		s.stream.Close()
	}
}

// subscribeStream subscribes a GET to its session's bus and to its own
// topic, with replicas; without, it returns no subscriptions.
func (h *Handler) subscribeStream(r *http.Request, sess *session, holder string) (streamSubs, *failure) {
	if !h.shared {
		return streamSubs{}, nil
	}
	main, err := h.store.Subscribe(r.Context(), sess.id)
	if err != nil {
		return streamSubs{}, h.storeFailure(err)
	}
	own, err := h.store.SubscribeTopic(r.Context(), sess.id, holder)
	if err != nil {
		main.Close()
		return streamSubs{}, h.storeFailure(err)
	}
	return streamSubs{session: main, stream: own}, nil
}

// keepForwarded keeps m, a message a pump forwarded to a stream that has
// ended, in the carry-over for the session's next stream, and counts it
// received.
func (h *Handler) keepForwarded(sess *session, m []byte) {
	h.met.received()
	sess.keep(decodeForwarded(m))
}

// keepUnread keeps the messages addressed to a stream that its closed
// subscription had buffered and the stream never wrote: they go to the
// carry-over, for the session's next stream (here, or elsewhere through the
// pump).
func (h *Handler) keepUnread(sess *session, msgs <-chan []byte) {
	if msgs == nil {
		return
	}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			h.keepForwarded(sess, m)
		default:
			return
		}
	}
}

// remotePoll is how often a GET waiting for another replica's stream to go
// tries to take the lease.
const remotePoll = 25 * time.Millisecond

// awaitRemoteStream is a GET's wait for a stream another replica holds. It
// asks the holder to probe its client and tries to take the lease every
// remotePoll. The wait, counted from the probe's publication, is long
// enough for the holder to find a dead client (MissedPongLimit probes, each
// probeWait apart) with half a probeWait to spare, and at least
// conflictGrace, for a client that closed its stream and reconnected at
// once; it never runs past what is left of d. A crashed holder's lease
// lapses within sharedLeaseTTL, well inside the wait at default settings.
// It reports true once the lease is free (the caller then claims it), false
// when the holder's client answered or the wait ran out (a store call cut
// short by the wait's end included: the store is not to blame), and a
// failure when the store fails (503) or the session ended (404).
func (h *Handler) awaitRemoteStream(ctx context.Context, sess *session, holder string, d time.Duration) (bool, *failure) {
	if d <= 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	sub, err := h.store.Subscribe(ctx, sess.id)
	if err != nil {
		return false, h.waitFailure(ctx, err)
	}
	defer sub.Close()
	// Nobody listening (ErrNoSubscribers) means the holder is gone without
	// releasing its lease: the poll below takes it once it lapses.
	if err := h.store.Publish(ctx, sess.id, frame(frameProbe, []byte(holder))); err != nil && !errors.Is(err, sessionstore.ErrNoSubscribers) {
		return false, h.waitFailure(ctx, err)
	}
	window := max(conflictGrace, time.Duration(h.cfg.MissedPongLimit)*h.probeWait()+h.probeWait()/2+remotePoll)
	if dl, ok := ctx.Deadline(); ok {
		window = min(window, time.Until(dl))
	}
	timer := time.NewTimer(window)
	defer timer.Stop()
	poll := time.NewTicker(remotePoll)
	defer poll.Stop()
	for {
		select {
		case m, ok := <-sub.Messages():
			if !ok {
				if h.endedInStore(sess.id) {
					return false, errSessionNotFound()
				}
				return false, nil
			}
			h.met.received()
			if len(m) == 1 && m[0] == frameAlive {
				return false, nil
			}
		case <-poll.C:
			free, err := h.streamFree(ctx, sess.id)
			if err != nil {
				return false, h.waitFailure(ctx, err)
			}
			if free {
				return true, nil
			}
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, nil
		}
	}
}

// waitFailure is the answer for a store error during awaitRemoteStream:
// none (the caller answers 409) when the wait's own context ended, which
// cut the call short; else storeFailure's.
func (h *Handler) waitFailure(ctx context.Context, err error) *failure {
	if ctx.Err() != nil && !isGone(err) {
		return nil
	}
	return h.storeFailure(err)
}

// storeFailure is the answer for a store error: 404 for a session that is
// gone, else 503.
func (h *Handler) storeFailure(err error) *failure {
	if isGone(err) {
		return errSessionNotFound()
	}
	return errStore(err)
}

// streamFree reports whether no unexpired lease holds the session's stream.
func (h *Handler) streamFree(ctx context.Context, id string) (bool, error) {
	_, held, err := h.store.StreamHolder(ctx, id)
	if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		return false, err
	}
	return !held, err
}
