package streamable

import (
	"context"
	"encoding/json"
)

// loggedEvent is an event a replay read from the event log.
type loggedEvent struct {
	id  string // the log's id
	msg json.RawMessage
}

// readAfter reads what the log holds after the log id from, without
// writing anything, and returns the stream that id belongs to. An
// EventLog names the stream only once it has sent the events
// (ReplayEventsAfter), and a resume must write nothing of a stream the
// client did not name: the events are written once the stream is known.
// What it holds is bounded by the log's per-stream bounds (the logs here
// hold the whole tail in memory during a replay anyway; the messages are
// not copied).
func (h *Handler) readAfter(ctx context.Context, sess *session, from string) (string, []loggedEvent, error) {
	var evs []loggedEvent
	stream, err := h.cfg.EventLog.ReplayEventsAfter(ctx, sess.id, from, func(id string, msg json.RawMessage) error {
		evs = append(evs, loggedEvent{id: id, msg: msg})
		return nil
	})
	return stream, evs, err
}
