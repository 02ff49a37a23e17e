package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// getStreamID is the stream id under which the event log keeps what a
// session's standalone GET stream sent. The log scopes every id by its
// session, so one name serves every session: an id of one session is
// unknown to every other.
//
// The session's GET stream is one stream across its connections: a fresh
// GET (no Last-Event-ID) continues it. A message gets its id once, when a
// connection first tries to write it; one that a connection could not
// write is carried to the next connection with that id (and so is in the
// log once): a resume that replays it does not write it again, a fresh
// connection writes it first, with its id, before anything newer.
const getStreamID = "get"

// resumeRetry is the SSE retry field a 2025-11-25 session's GET stream
// opens with: how long its client waits before it reconnects once the
// stream breaks. One second: long enough not to hammer a server that is
// restarting, short enough that a notification waits little, and over
// conflictGrace, so that by the time the client is back a stream whose
// connection died without a word has usually been noticed.
const resumeRetry = time.Second

// maxEventIDLen bounds an event id: a Last-Event-ID longer than this is
// unknown at once, and an id a log returns longer than this (or with CR or
// LF) is not written (the message goes without an id).
const maxEventIDLen = 256

// primes reports whether a session that negotiated version gets a
// priming event and a retry field when its stream opens: 2025-11-25 on
// (SEP-1699); older clients may choke on an event with empty data.
func primes(version string) bool { return version >= "2025-11-25" }

// record stores msg as the next event of sess's GET stream and returns its
// SSE id, or "" when there is no log or the log refused it (full, too
// large, down): the message then goes without an id, and a resume after it
// cannot replay it (nothing else changes for it: it is written, or carried
// to the next stream, as without a log).
func (h *Handler) record(sess *session, msg []byte) string {
	return h.recordOn(sess.ctx(), sess, getStreamID, msg)
}

// recordOn stores msg as the next event of sess's stream and returns its
// SSE id (event_ids.go), or "" as record does. The store is bounded by the
// write timeout and ends with parent.
func (h *Handler) recordOn(parent context.Context, sess *session, stream string, msg []byte) string {
	log := h.cfg.EventLog
	if log == nil {
		return ""
	}
	// Bounded like a write, and cut short when parent ends (the session,
	// for the GET stream): a log that hangs never holds a handler. The
	// memory log does neither (and costs no timer).
	ctx := parent
	if !h.logLocal {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, h.cfg.WriteTimeout)
		defer cancel()
	}
	id, err := log.StoreEvent(ctx, sess.id, stream, msg)
	return h.recorded(sess, stream, msg, id, err)
}

// recordAllOn stores msgs as the next events of sess's stream, in order,
// and returns their SSE ids, each as recordOn would: with a log that
// records batches (sessionstore.EventBatchLog, the Redis log), in one
// call, one round trip for them all. A batch the log refuses for a
// message's size is recorded one by one, so that only that message goes
// without an id.
func (h *Handler) recordAllOn(parent context.Context, sess *session, stream string, msgs [][]byte) []string {
	ids := make([]string, len(msgs))
	oneByOne := func() []string {
		for i, m := range msgs {
			ids[i] = h.recordOn(parent, sess, stream, m)
		}
		return ids
	}
	batcher, ok := h.cfg.EventLog.(sessionstore.EventBatchLog)
	if !ok || len(msgs) < 2 {
		return oneByOne()
	}
	ctx, cancel := context.WithTimeout(parent, h.cfg.WriteTimeout) // as recordOn bounds one
	defer cancel()
	got, err := batcher.StoreEvents(ctx, sess.id, stream, rawMessages(msgs))
	if errors.Is(err, sessionstore.ErrEventTooLarge) {
		return oneByOne()
	}
	if err == nil && len(got) != len(msgs) {
		err = fmt.Errorf("the event log returned %d ids for %d messages", len(got), len(msgs))
	}
	for i, m := range msgs {
		var id string
		if err == nil {
			id = got[i]
		}
		ids[i] = h.recorded(sess, stream, m, id, err)
	}
	return ids
}

// rawMessages is msgs as the event log takes them (no copy).
func rawMessages(msgs [][]byte) []json.RawMessage {
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raw[i] = m
	}
	return raw
}

// countUnrecorded counts n messages the event log refused and returns the
// total, and whether to log it now: when the total passed a power of 10
// (now and then, not once per refusal).
func (h *Handler) countUnrecorded(n int) (total int64, now bool) {
	total = h.unrecorded.Add(int64(n))
	for c := total - int64(n) + 1; c <= total; c++ {
		if isPowerOf10(c) {
			return total, true
		}
	}
	return total, false
}

// recorded is what recordOn and recordAllOn return for msg, which the log
// stored as id or refused with err: its SSE id, or "" (counted, and
// logged now and then).
func (h *Handler) recorded(sess *session, stream string, msg []byte, id string, err error) string {
	if err == nil {
		id = wireEventID(stream, id)
		if !validEventID(id) {
			err = fmt.Errorf("the event log returned an id that cannot go on an SSE stream (%d bytes)", len(id))
		}
	}
	if err != nil {
		if n, now := h.countUnrecorded(1); now {
			h.log.Warn("lifeline: event log refused a message; it goes without an id and cannot be replayed",
				"session", logID(sess.id), "stream", stream, "bytes", len(msg), "err", err, "unrecorded_total", n)
		}
		return ""
	}
	if len(msg) > 0 {
		h.met.recorded()
	}
	return id
}

// isMemoryLog reports whether log is the process-local MemoryEventLog.
func isMemoryLog(log sessionstore.EventLog) bool {
	_, ok := log.(*sessionstore.MemoryEventLog)
	return ok
}

func validEventID(id string) bool {
	return id != "" && len(id) <= maxEventIDLen && !strings.ContainsAny(id, "\r\n")
}

// getResume is what a GET stream resuming after a Last-Event-ID keeps:
// the id, and the ids of what it replayed or the session carried over for
// it (true once replayed), so that a carried or forwarded copy is not
// written again.
type getResume struct {
	from     string
	replayed map[string]bool
}

// sent reports whether the resume replayed the event id; a nil r (a
// fresh stream) replayed nothing.
func (r *getResume) sent(id string) bool { return r != nil && r.replayed[id] }

// openGet writes the opening of g: for a 2025-11-25 session a priming
// event (an id and empty data) with the retry field, otherwise an SSE
// comment. The priming id is the Last-Event-ID when the stream resumes (the
// client's cursor, which a resume from it replays after), else a new
// event of empty data recorded for it, so that a resume from it replays
// everything the stream sends afterwards. A fresh stream whose carry-over
// begins with a recorded message gets no new priming event (it would be
// newer than that message, and a client that resumed from it would miss
// it): the carried message, written next with its id, primes it.
func (h *Handler) openGet(g *getStream) error {
	if h.cfg.EventLog == nil || !primes(g.sess.ProtocolVersion()) {
		return g.start()
	}
	retry := "retry: " + strconv.FormatInt(resumeRetry.Milliseconds(), 10) + "\n"
	id := ""
	if g.resume != nil {
		id = g.resume.from
	}
	if id == "" && g.sess.carryHeadRecorded() {
		return g.startWith(retry + ": stream open\n\n")
	}
	if id == "" {
		id = h.record(g.sess, nil)
	}
	if id == "" {
		return g.start()
	}
	return g.startWith("id: " + id + "\n" + retry + "data: \n\n")
}

// replay opens g, which resumes its session's stream after g.resume.from,
// and writes, in order and once each, what the stream sent after that id
// (primings apart). It answers, instead of opening the stream, an id the
// log does not hold for the session (400) or a log that fails before
// anything was written (503); it reports whether the stream may go on.
func (h *Handler) replay(g *getStream) bool {
	rs := g.resume
	rs.replayed = g.sess.carriedIDs()
	if rs.replayed != nil {
		rs.replayed[rs.from] = true // the client has it
	}
	opened := false
	open := func() error {
		opened = true
		if err := h.openGet(g); err != nil {
			if !g.begun() {
				h.writeFailure(g.w, h.goneAnswer())
			}
			return err
		}
		return nil
	}
	_, from, _ := splitEventID(rs.from) // runGet checked it names the GET stream
	// Read first, written once the log has said the id is the GET
	// stream's: nothing of another stream may go on this one.
	stream, evs, err := h.readAfter(g.ctx, g.sess, from)
	var wrote error // the first write that failed: the stream is gone
	if err == nil && stream == getStreamID {
		for _, ev := range evs {
			id := wireEventID(getStreamID, ev.id)
			if !opened {
				if wrote = open(); wrote != nil {
					break
				}
			}
			if len(ev.msg) == 0 {
				continue // a priming event: nothing to deliver
			}
			if wrote = g.eventWithID(id, ev.msg); wrote != nil {
				break
			}
			h.met.replayed(1)
			if rs.replayed == nil {
				rs.replayed = make(map[string]bool)
			}
			rs.replayed[id] = true // a carried or forwarded copy is not written again
		}
	}
	switch {
	case wrote != nil:
		return false
	case errors.Is(err, sessionstore.ErrUnknownEventID) && !opened:
		// The log no longer holds the id (evicted, expired, another
		// replica's memory, another session's): the session is live, so
		// the stream opens afresh, with what is carried, rather than
		// answer an error a client takes for its session's end.
		h.freshStream(g, "the event log does not hold it")
		return open() == nil
	case err != nil: // nothing was written yet
		h.writeFailure(g.w, errStore(fmt.Errorf("replay events: %w", err)))
		return false
	case stream != getStreamID:
		// A request stream's log id under the GET stream's name: nothing
		// of that stream was written; the stream opens afresh.
		h.freshStream(g, "it names another stream")
		return open() == nil
	case !opened:
		return open() == nil
	}
	return true
}

// resumeCarried settles the carry-over of a stream that resumed: what the
// replay has just sent (replayed[id] is true), or the client had (its id is
// the client's cursor), is not written again. It returns the carry-over
// still to write.
func (sess *session) resumeCarried(carry []carried, replayed map[string]bool) []carried {
	rest := carry[:0]
	for _, c := range carry {
		if c.id == "" || !replayed[c.id] {
			rest = append(rest, c)
			continue
		}
		if sess.calls.take(c.msg) {
			sess.calls.wrote(c.msg)
		}
	}
	return rest
}

// carriedIDs returns the event ids of the carry-over's recorded messages,
// each mapped to false (nil when there are none).
func (sess *session) carriedIDs() map[string]bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var ids map[string]bool
	for _, c := range sess.carry {
		if c.id != "" {
			if ids == nil {
				ids = make(map[string]bool, len(sess.carry))
			}
			ids[c.id] = false
		}
	}
	return ids
}

// carryHeadRecorded reports whether the carry-over's first message has an
// event id. Only the stream that holds the session's slot takes from the
// carry-over; others only append, so the head stays until it does.
func (sess *session) carryHeadRecorded() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return len(sess.carry) > 0 && sess.carry[0].id != ""
}

// freshStream turns g, which asked to resume after an id that cannot be
// resumed after, into a fresh stream: nothing is replayed, and its opening
// gets a new priming id. What the client missed before is lost to it.
func (h *Handler) freshStream(g *getStream, why string) {
	h.log.Warn("lifeline: a GET's Last-Event-ID cannot be resumed after; the stream opens afresh",
		"session", logID(g.sess.id), "reason", why)
	g.resume = nil
}
