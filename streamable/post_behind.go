package streamable

import (
	"context"
	"strings"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Recording a whole response behind its write. With a log in another
// process that can record a stream under ids known beforehand
// (sessionstore.EventStreamLog: the Redis log), a resumable POST response
// written whole (its linger's end: post_linger.go) is written first, its
// events under ids of their place in the stream (stream/~k), and recorded
// after, once the handler has returned and net/http has sent the
// response: the call's client does not wait for the round trip.
//
// The record stays the request's: the request counts as its session's
// work, and as running on its stream here (postSignals), until the record
// has landed or failed (bounded by the write timeout, as any store), so
// termination and Shutdown wait for it and a resumer here waits for it. A
// resumer anywhere that finds an id of such a stream unknown waits a
// write timeout for its record before it takes it for unknown
// (resume_post.go). A record that fails leaves the client ids the log does
// not hold: as when a store fails after the client got its events, only a
// resume from them fails (unknown id). The record goes to the writer
// pool's goroutines (writer_pool.go), which the Handler's Shutdown joins.

// behindLog is the log that records responses behind their writes, or nil
// for cfg's log: one in another process with StoreStream.
func behindLog(cfg Config, local bool) sessionstore.EventStreamLog {
	if local {
		return nil
	}
	l, _ := cfg.EventLog.(sessionstore.EventStreamLog)
	return l
}

// maxBehindRecords bounds the records of one session pending behind their
// writes: past it, a whole response is recorded before it is written, as
// any other, so that a log slower than the session's calls slows them
// down instead of growing a backlog. Requests whose record is pending do
// not count towards MaxRequestsPerSession's limit: they have answered.
const maxBehindRecords = 16

// goesBehind reports whether the response, opening whole now, is written
// before it is recorded, and if so counts its record in (endWork counts it
// out).
func (p *postStream) goesBehind() bool {
	return p.h.streamLog != nil && p.sse == nil && p.last && p.sess.beginBehind()
}

// beginBehind counts a record behind its write in, unless the session has
// maxBehindRecords pending.
func (s *session) beginBehind() bool { return s.takeBounded(&s.behind, maxBehindRecords) }

// endBehind counts a record behind its write out, once it landed or failed.
func (s *session) endBehind() { s.giveBounded(&s.behind) }

// placeIDs returns the SSE ids of a whole response's n events (its
// priming event first, when it has one), each by its place in the stream.
func (p *postStream) placeIDs(n int) []string {
	ids := make([]string, n)
	for k := range ids {
		ids[k] = p.h.postWireID(p.stream, sessionstore.StreamEventID(p.stream, k))
	}
	return ids
}

// streamPlaceSep starts an event's place in the stream in the log id part
// of an SSE id (stream/~k): the log's id, sessionstore.StreamEventID,
// without the stream, which the SSE id names already.
const streamPlaceSep = "~"

// logEventID returns the log's id of the event whose SSE id has log part
// from on stream: a place (~k) given its stream back when responses are
// recorded behind their writes.
func (h *Handler) logEventID(stream, from string) string {
	if h.streamLog != nil && strings.HasPrefix(from, streamPlaceSep) {
		return stream + from
	}
	return from
}

// postWireID is wireEventID for an event replayed on a POST stream: a
// place id (sessionstore.StreamEventID's form) written as stream/~k.
func (h *Handler) postWireID(stream, logID string) string {
	if h.streamLog != nil {
		if rest, ok := strings.CutPrefix(logID, stream); ok && strings.HasPrefix(rest, streamPlaceSep) {
			return stream + eventIDSep + rest
		}
	}
	return wireEventID(stream, logID)
}

// endWork ends the request's work: at once, or, with a record behind the
// write pending, on a goroutine of the writer pool once it has landed.
func (p *postStream) endWork() {
	if p.behind == nil {
		p.sess.endWork(p)
		return
	}
	batch := p.behind
	p.behind = nil
	p.h.writers.run(func() {
		p.storeBehind(batch)
		p.h.postSignals.settle(p.signal) // running here until recorded
		p.sess.endBehind()
		p.sess.endWork(p)
	})
}

// storeBehind records batch as the whole of the request's stream.
func (p *postStream) storeBehind(batch [][]byte) {
	ctx, cancel := context.WithTimeout(p.recordParent(), p.h.cfg.WriteTimeout) // as recordOn bounds one
	defer cancel()
	err := p.h.streamLog.StoreStream(ctx, p.sess.id, p.stream, rawMessages(batch))
	if cause := p.sess.endedWith(); err != nil && cause != nil && !p.sess.livesOn(cause) {
		return // the session ended for good (a DELETE right after the call, say): its log is purged, nothing of it is lost
	}
	if err != nil {
		if n, now := p.h.countUnrecorded(len(batch)); now {
			p.h.log.Warn("lifeline: event log refused a response written before its record; a resume from it fails",
				"session", logID(p.sess.id), "stream", p.stream, "events", len(batch), "err", err, "unrecorded_total", n)
		}
		return
	}
	for _, m := range batch {
		if len(m) > 0 {
			p.h.met.recorded()
		}
	}
}
