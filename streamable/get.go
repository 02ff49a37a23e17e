package streamable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// errDeadPeer closes a stream whose client stopped answering pings.
var errDeadPeer = errors.New("client stopped answering pings")

// getStream is a session's standalone GET stream.
type getStream struct {
	sseStream
	sess    *session
	tracker *heartbeat.Tracker
	beat    *heartbeat.Entry // its heartbeat; nil when heartbeats are off
	// wake is the idle stream's one signal, for everything but a message:
	// the stream ended, its heartbeat is due (beat.Fired) or was
	// triggered, the session's queues were made.
	wake chan struct{}
	// done is closed once the handler has exited (gone); it is made only
	// when someone waits for that (exited). Both are guarded by mu.
	done chan struct{}
	gone bool
	// Not guarded by mu (each says what guards it), next to gone to
	// spare the struct its padding.
	renewFailing bool  // the last lease renewal failed (store outage)
	pingNext     uint8 // the slot of pingIDs the next ping takes; guarded by sess.calls.mu
	lease        sessionstore.Lease
	// pingIDs are the ids of the stream's last pingsKeptPerStream pings,
	// 0 in a slot not yet used (issued ids are > 0); guarded by
	// sess.calls.mu. In the stream itself, not a slice, and found through
	// callTable.pingers, not a map: every idle stream pings.
	pingIDs [pingsKeptPerStream]int64

	// resume is what a stream resuming after a Last-Event-ID keeps
	// (resume.go); nil for a fresh stream or without an event log.
	resume *getResume

	// cl is what the stream keeps with replicas (cluster_get.go); nil
	// without them, which spares every idle stream its bytes.
	cl *clusterGet
}

// serveGet serves a GET: a resume of a request's stream, or the session's
// standalone stream, which the handler goroutine runs until it ends
// (runGet). The stream is admitted in a frame of its own (admitGetRequest),
// gone by the time the stream waits: an idle stream's goroutine then uses
// little enough of its stack for the runtime to shrink it.
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request) {
	if g := h.admitGetRequest(w, r); g != nil {
		h.runGet(g)
	}
}

// admitGetRequest checks a GET and admits its stream (or answers it, and
// returns nil: refused, or a request stream's resume, served here).
//
//go:noinline
func (h *Handler) admitGetRequest(w http.ResponseWriter, r *http.Request) *getStream {
	if h.cfg.DisableStreaming {
		h.writeFailure(w, errStreamingDisabled())
		return nil
	}
	if !accepts(r, "text/event-stream") {
		h.writeFailure(w, errNotAcceptableGet())
		return nil
	}
	if f := h.checkProtocolVersion(r); f != nil {
		h.writeFailure(w, f)
		return nil
	}
	sess, f := h.session(r, true)
	if f != nil {
		h.writeFailure(w, f)
		return nil
	}
	if h.cfg.EventLog != nil {
		if last := r.Header.Get("Last-Event-ID"); last != "" {
			if stream, from, ok := splitEventID(last); ok && isPostStream(stream) && validEventID(last) {
				h.resumePost(w, r, sess, last, stream, h.logEventID(stream, from))
				return nil
			}
		}
	}
	// With replicas the stream listens on the session's bus before it
	// takes the lease, so that nothing sent to it once it holds the lease
	// can miss it.
	holder := fmt.Sprintf("%s/%d", h.holder, h.streamSeq.Add(1))
	subs, f := h.subscribeStream(r, sess, holder)
	if f != nil {
		h.writeFailure(w, f)
		return nil
	}
	g, f := h.admitGet(sess, holder, w, r)
	if f != nil {
		subs.close()
		h.writeFailure(w, f)
		return nil
	}
	if subs.session != nil {
		g.cl = &clusterGet{subs: subs}
	}
	if h.cfg.EventLog != nil {
		if from := r.Header.Get("Last-Event-ID"); from != "" {
			g.resume = &getResume{from: from}
		}
	}
	return g
}

// admitGet makes the request the session's one live GET stream, or says why
// not. An old stream that is already dying is waited for (bounded); an old
// stream whose client has answered pings is probed, and taken over if it
// has stopped answering; a live one gets 409.
func (h *Handler) admitGet(sess *session, holder string, w http.ResponseWriter, r *http.Request) (*getStream, *failure) {
	// Each round either admits, answers, or waits (bounded) for an old
	// stream to go; a few rounds cover a takeover racing another GET.
	deadline := time.Now().Add(h.cfg.CleanupTimeout)
	for round := 1; ; round++ {
		g, old, f := h.claimGet(sess, holder, w, r)
		if g != nil || f != nil {
			return g, f
		}
		if round == maxAdmitRounds {
			return nil, errStreamConflict()
		}
		switch {
		case old == nil:
			// Held by another replica (cluster_get.go).
			free, f := h.awaitRemoteStream(r.Context(), sess, holder, time.Until(deadline))
			if f != nil {
				return nil, f
			}
			if !free {
				return nil, errStreamConflict()
			}
		case old.dying():
			if !h.awaitExit(r.Context(), old, time.Until(deadline)) {
				return nil, errStreamConflict()
			}
		case h.pings() && old.tracker.Answered():
			if !h.probeDead(r.Context(), old) {
				return nil, errStreamConflict()
			}
		default:
			// A client that closed its stream and reconnected at once can
			// be faster than the server noticing the close: give the old
			// handler a moment to exit before answering 409.
			if !h.awaitExit(r.Context(), old, conflictGrace) {
				return nil, errStreamConflict()
			}
		}
	}
}

// maxAdmitRounds bounds how often a GET retries admission after an old
// stream went away.
const maxAdmitRounds = 3

// claimGet takes the session's stream slot if it is free. Otherwise it
// returns the stream that holds it, or, with replicas, neither when another
// replica holds it. It is serialized with termination.
func (h *Handler) claimGet(sess *session, holder string, w http.ResponseWriter, r *http.Request) (*getStream, *getStream, *failure) {
	sess.life.Lock()
	defer sess.life.Unlock()
	if !sess.active() {
		return nil, nil, h.goneAnswer()
	}
	if old := sess.liveGet(); old != nil {
		return nil, old, nil
	}
	lease, err := h.store.AcquireStream(r.Context(), sess.id, holder, h.leaseTTL())
	switch {
	case errors.Is(err, sessionstore.ErrStreamHeld) && h.shared:
		return nil, nil, nil
	case errors.Is(err, sessionstore.ErrStreamHeld):
		return nil, nil, errStreamConflict()
	case isGone(err):
		return nil, nil, errSessionNotFound()
	case err != nil:
		h.storeFailed(r.Context(), "acquire stream", err)
		return nil, nil, errStore(err)
	}
	g := &getStream{
		sess:    sess,
		tracker: heartbeat.NewTracker(h.cfg.MissedPongLimit),
		wake:    make(chan struct{}, 1),
		lease:   lease,
	}
	// Only with replicas does the stream need a context of its own (store
	// calls it ends must be cut short); alone it watches the request's.
	g.init(r.Context(), w, h.cfg.WriteTimeout, h.shared, g.wake)
	g.met = h.met
	if h.sched != nil {
		g.beat = h.sched.AddSignal(h.beatInterval(), g.wake)
	}
	sess.mu.Lock()
	sess.get = g
	sess.claimHeldLocked() // what was sent before it goes first
	sess.mu.Unlock()
	// A pump forwarding this session's messages elsewhere stops, and what
	// it holds goes ahead of the queues, for this stream.
	sess.stopPump()
	// So does an ended stream's lingering topic: what it kept goes to the
	// carry-over, which this stream writes first.
	sess.stopLinger()
	return g, nil, nil
}

// minLeaseTTL keeps a lease from lapsing between two heartbeats of a busy
// stream when the heartbeat is very short.
const minLeaseTTL = time.Second

// leaseTTL is how long a stream lease lasts without renewal. Alone, it
// outlasts the missed-pong limit and is renewed on every heartbeat; with
// replicas it is capped at sharedLeaseTTL and renewed three times per TTL
// on a timer of its own (cluster_lease.go), so that a crashed replica's
// streams are free within seconds.
func (h *Handler) leaseTTL() time.Duration {
	if h.sched == nil {
		return 0
	}
	ttl := max(time.Duration(h.cfg.MissedPongLimit+1)*h.beatInterval(), minLeaseTTL)
	if h.shared {
		ttl = min(ttl, sharedLeaseTTL)
	}
	return ttl
}

// renewLease extends lease, g's current one, and returns the lease to keep.
// A lease that lapsed while nobody else took it is taken again; one another
// holder took is lost, and so is the session if it ended: those are errors.
// A store that fails otherwise (an outage) leaves the stream serving with
// its old lease: it is logged once, and renewal goes on at the next tick
// (with replicas, at the renewer's next run).
// It runs on the stream's handler, or (shared store) on the stream's
// renewer (cluster_lease.go), one renewal at a time.
func (h *Handler) renewLease(g *getStream, lease sessionstore.Lease) (sessionstore.Lease, error) {
	l, err := h.store.RenewStream(g.ctx, lease, h.leaseTTL())
	if errors.Is(err, sessionstore.ErrLeaseLost) {
		l, err = h.store.AcquireStream(g.ctx, g.sess.id, lease.Holder, h.leaseTTL())
	}
	switch {
	case err == nil:
		h.storeAnswered()
		if g.renewFailing {
			h.log.Debug("lifeline: stream lease renewed again", "session", logID(g.sess.id))
			g.renewFailing = false
		}
		return l, nil
	case errors.Is(err, sessionstore.ErrStreamHeld), errors.Is(err, sessionstore.ErrLeaseLost), isGone(err), g.ctx.Err() != nil:
		return lease, fmt.Errorf("renew stream lease: %w", err)
	}
	h.storeFailed(g.ctx, "renew stream lease", err)
	if !g.renewFailing {
		h.log.Debug("lifeline: cannot renew the stream lease; the stream keeps serving", "session", logID(g.sess.id), "err", err)
		g.renewFailing = true
	}
	return lease, nil
}

// awaitExit waits, at most d, for a stream's handler to exit.
func (h *Handler) awaitExit(ctx context.Context, g *getStream, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.exited():
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// conflictGrace is how long a conflicting GET waits for an old stream that
// shows no sign of dying before it is answered 409.
const conflictGrace = 500 * time.Millisecond

// probeWait is how long a conflicting GET waits for each probe's pong.
func (h *Handler) probeWait() time.Duration {
	return min(max(h.cfg.HeartbeatInterval, 100*time.Millisecond), 2*time.Second)
}

// probeDead pings an old stream at once, up to the missed-pong limit, and
// reports whether it turned out dead and has been closed and exited.
func (h *Handler) probeDead(ctx context.Context, old *getStream) bool {
	for range h.cfg.MissedPongLimit {
		pong := old.tracker.PongSignal()
		// A heartbeat now: it pings (and closes the stream once the
		// client counts as dead).
		old.beat.Trigger()
		t := time.NewTimer(h.probeWait())
		select {
		case <-pong:
			t.Stop()
			return false
		case <-old.exited():
			t.Stop()
			return true
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		if old.tracker.Dead() {
			break
		}
	}
	if !old.tracker.Dead() {
		return false
	}
	h.log.Warn("lifeline: closing a dead GET stream for a reconnecting client (taken over)",
		"session", logID(old.sess.id), "unanswered_pings", old.tracker.Unanswered())
	if old.closeFirst(errTakenOver) { // not already closed as a dead peer by its own heartbeat
		h.met.deadPeer()
		h.met.takeover()
	}
	return h.awaitExit(ctx, old, h.cfg.CleanupTimeout)
}

// exited returns a channel that is closed once the stream's handler has
// exited.
func (g *getStream) exited() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done == nil {
		g.done = make(chan struct{})
		if g.gone {
			close(g.done)
		}
	}
	return g.done
}

// markExited records that the stream's handler has exited.
func (g *getStream) markExited() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gone = true
	if g.done != nil {
		close(g.done)
	}
}

// encodeNotification encodes n for a stream (encodeNotificationJSON), or
// logs and returns nil for one that does not encode. It is not inlined so
// that n, which may escape into json.Marshal, is copied to the heap only
// when a notification is sent, not once per stream by the select that
// receives it.
//
//go:noinline
func (h *Handler) encodeNotification(sessionID string, n mcp.JSONRPCNotification) []byte {
	b, err := encodeNotificationJSON(n)
	if err != nil {
		h.log.Error("lifeline: dropping a notification that does not encode",
			"session", logID(sessionID), "method", n.Method, "err", err)
		return nil
	}
	return b
}

// ping sends a JSON-RPC ping with a session-unique id on g.
func (h *Handler) ping(g *getStream) error {
	id := g.sess.calls.newPing(g)
	g.tracker.Sent()
	h.met.ping()
	return g.event(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
}
