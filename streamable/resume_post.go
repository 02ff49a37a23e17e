package streamable

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Resuming a POST's response stream: a GET whose Last-Event-ID names a
// POST stream (event_ids.go) is sent what that stream recorded after the
// id, in order and once each, then follows it live until the request's
// answer, and ends. It does not take the session's standalone-stream slot
// (the one-GET rule and its 409 are the standalone stream's), and any
// replica serves it from a shared log.
//
// Live events arrive through the log: the resumer replays after its cursor
// again each time the stream changes. A request that runs here signals
// each event (postSignals); one that runs on another replica is polled
// for every resumePoll. A request that runs nowhere any more without an
// answer in the log is answered for: here, as soon as that is known; on
// another replica, once its stream has been silent for lostAfter (a
// running request records a marker at every keep-alive).

// maxResumedStreams bounds the resumed POST streams one session has open
// at once (a 409 past it). A client resumes one per request it has
// running; 32 is more than any runs at once.
const maxResumedStreams = 32

// resumePoll is how often a resumer of a request running on another
// replica reads the shared log.
const resumePoll = 250 * time.Millisecond

// lostAfter is how long a stream whose request runs on another replica may
// stay silent, keep-alive markers included, before its request is taken
// for lost: three keep-alives. Zero (heartbeats off) never does.
func (h *Handler) lostAfter() time.Duration { return 3 * h.cfg.HeartbeatInterval }

// resumePost serves a GET resuming the POST stream stream after the log id
// from (Last-Event-ID lastID).
func (h *Handler) resumePost(w http.ResponseWriter, r *http.Request, sess *session, lastID, stream, from string) {
	if !sess.addResumer() {
		h.writeFailure(w, errTooManyResumes(maxResumedStreams))
		return
	}
	defer sess.removeResumer()
	key := signalKey(sess.id, stream)
	h.postSignals.add(key, 0, 1)
	defer h.postSignals.add(key, 0, -1)
	wake := make(chan struct{}, 1)
	st := &sseStream{}
	st.init(r.Context(), w, h.cfg.WriteTimeout, true, wake)
	st.met = h.met
	h.met.streamOpened(streamResume)
	defer h.met.streamClosed(streamResume)
	sess.addPostStream(st) // DELETE and Shutdown end it
	defer sess.removePostStream(st)
	defer st.close(errStreamClosed)

	var keepalive, poll <-chan time.Time
	if h.pings() {
		t := time.NewTicker(h.cfg.HeartbeatInterval)
		defer t.Stop()
		keepalive = t.C
	}
	if h.shared {
		t := time.NewTicker(resumePoll)
		defer t.Stop()
		poll = t.C
	}
	cursor, opened, heard := from, false, time.Now()
	// An id of a response recorded behind its write (post_behind.go) may
	// be unknown only until its record lands: within a write timeout.
	recordWait := recordWait{due: heard.Add(h.cfg.WriteTimeout), poll: recordPoll}
	sessionEnded := sess.ctx().Done()
	for {
		changed, local, settled := h.postSignals.next(key)
		got, final, wrote, err := h.replayPost(st, sess, stream, &cursor, &opened)
		switch {
		case wrote != nil:
			return
		case err != nil && !opened:
			if errors.Is(err, sessionstore.ErrStreamNotStored) && !settled && (local || h.shared) && time.Now().Before(recordWait.due) {
				if !recordWait.await(st, wake, sess, changed, local) {
					if sess.endedWith() != nil {
						h.writeFailure(w, h.goneAnswer()) // terminated meanwhile
					}
					return
				}
				continue
			}
			if errors.Is(err, sessionstore.ErrUnknownEventID) {
				h.log.Warn("lifeline: a GET's Last-Event-ID names a request stream the event log does not hold",
					"session", logID(sess.id), "err", err)
				h.writeFailure(w, errUnknownEventID(lastID))
				return
			}
			h.writeFailure(w, errStore(fmt.Errorf("replay events: %w", err)))
			return
		case err != nil:
			h.log.Warn("lifeline: event log failed during a request stream's replay; closing it",
				"session", logID(sess.id), "err", err)
			return
		case final:
			return
		}
		if !opened {
			if st.startWith(": stream resumed\n\n") != nil {
				return
			}
			opened = true
		}
		if got {
			heard = time.Now()
		}
		if !local && (!h.shared || (h.lostAfter() > 0 && time.Since(heard) > h.lostAfter())) {
			// Nothing more can come: no replica runs the request.
			h.answerLost(st, sess, stream)
			return
		}
		select {
		case <-changed:
		case <-poll:
		case <-keepalive:
			if st.comment("keepalive") != nil {
				return
			}
		case <-wake:
			return // closed: DELETE, Shutdown, or a failed write
		case <-st.ctx.Done():
			return // the client left
		case <-sessionEnded:
			return
		}
	}
}

// replayPost writes what stream recorded after *cursor, advancing it,
// opening st first if need be. It reports whether anything (a keep-alive
// marker included) was recorded, whether the request's answer was written,
// the write that failed, and the log's error. An id of another stream is
// the log's ErrUnknownEventID, and nothing of that stream is written.
func (h *Handler) replayPost(st *sseStream, sess *session, stream string, cursor *string, opened *bool) (got, final bool, wrote, err error) {
	replayed, evs, err := h.readAfter(st.ctx, sess, *cursor)
	if err == nil && replayed != stream {
		err = fmt.Errorf("%w: the id belongs to another stream of the session", sessionstore.ErrUnknownEventID)
	}
	if err != nil {
		return false, false, nil, err
	}
	for _, ev := range evs {
		got = true
		*cursor = ev.id
		if len(ev.msg) == 0 {
			continue // a priming event or a keep-alive marker
		}
		if !*opened {
			if wrote = st.start(); wrote != nil {
				return got, false, wrote, nil
			}
			*opened = true
		}
		if wrote = st.eventWithID(h.postWireID(stream, ev.id), ev.msg); wrote != nil {
			return got, false, wrote, nil
		}
		h.met.replayed(1)
		if isFinalResponse(ev.msg) {
			return got, true, nil, nil
		}
	}
	return got, false, nil, nil
}

// answerLost ends a resumed stream whose request no replica runs any more
// and whose answer the log does not hold: the client gets an error answer
// for it (when the stream's name carries the request's id) instead of
// waiting forever.
func (h *Handler) answerLost(st *sseStream, sess *session, stream string) {
	id := streamRequestID(stream)
	h.log.Warn("lifeline: a resumed request stream's request is gone without an answer",
		"session", logID(sess.id), "stream", stream)
	if id == nil {
		_ = st.comment("the request's answer is lost")
		return
	}
	b, err := json.Marshal(rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: rpcErrorBody{Code: mcp.INTERNAL_ERROR,
		Message: "the request was lost: the server running it stopped before it answered; it may or may not have taken effect"}})
	if err == nil {
		_ = st.event(b)
	}
}

// recordPoll is how long a resumer first waits before it reads the shared
// log again for the record of a response written before it was recorded
// on another replica; each wait doubles it, up to resumePoll (a made-up id
// of that form costs a few reads, not one per recordPoll).
const recordPoll = 10 * time.Millisecond

// recordWait is a resumer's wait for the record of a response written
// before it was recorded (post_behind.go): never past due.
type recordWait struct {
	due  time.Time
	poll time.Duration // the next wait for another replica's record
}

// await waits for the stream's next change (changed) when its request
// runs here (local), else for w.poll, doubling it; never past w.due. It
// reports false when the client left, st was closed or the session ended
// meanwhile.
func (w *recordWait) await(st *sseStream, wake <-chan struct{}, sess *session, changed <-chan struct{}, local bool) bool {
	wait := time.Until(w.due)
	if !local {
		wait = min(wait, w.poll)
		w.poll = min(2*w.poll, resumePoll)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-wake:
		return false
	case <-st.ctx.Done():
		return false
	case <-sess.ctx().Done():
		return false
	}
	return true
}
