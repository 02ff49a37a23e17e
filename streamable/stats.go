package streamable

import (
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Stats is a snapshot of what a Handler holds.
type Stats struct {
	// Sessions is the number of live sessions in this process (2026-07-28
	// requests, which have none, are not counted; stateless requests are).
	Sessions int
	// GetStreams is the number of open standalone GET streams.
	GetStreams int
	// PostStreams is the number of POST responses upgraded to SSE and open.
	PostStreams int
	// QueuedMessages is the number of messages waiting in sessions' queues
	// (and carried over from failed streams) for GET streams to write them.
	QueuedMessages int
	// RefusedMessages counts notifications refused since New because their
	// queue was full (counted as mcp-go is about to send into a full queue,
	// so it can be off by the few that a reader drained just in time).
	RefusedMessages int64
	// ListenStreams is the number of open 2026-07-28 subscriptions/listen
	// streams.
	ListenStreams int
	// DroppedMessages counts messages bound for GET streams dropped since
	// New because 3 streams (maxWriteAttempts) failed to write them, each
	// drop logged at Warn: one message a client cannot take whole never
	// holds back those queued behind it. Broadcasts refused because the
	// broadcast tap's queue stayed full (broadcast.go) count here too.
	DroppedMessages int64
	// CallerMismatches counts requests refused with 403 since New because
	// their session is bound to another caller (Config.Identify).
	CallerMismatches int64
	// CallerSessionsRefused counts initialize requests refused with 429
	// since New because their caller held MaxSessionsPerCaller sessions.
	CallerSessionsRefused int64
	// SessionRequestsRefused counts requests refused with 429 since New
	// because their session had MaxRequestsPerSession running.
	SessionRequestsRefused int64
}

// Stats reports what the handler holds right now.
func (h *Handler) Stats() Stats {
	sessions := h.snapshot()
	queued, live := 0, 0
	for _, s := range sessions {
		queued += s.queued()
		if !s.modern {
			live++
		}
	}
	dropped := h.droppedCount.Load()
	if c, ok := h.cfg.Store.(sessionstore.BroadcastDropCounter); ok && h.clusterBroadcaster() != nil {
		dropped += int64(c.BroadcastsDropped())
	}
	return Stats{Sessions: live, GetStreams: int(h.getStreams.Load()), ListenStreams: h.listens.count(),
		PostStreams: int(h.postStreams.Load()), QueuedMessages: queued,
		RefusedMessages: h.refusedCount.Load(), DroppedMessages: dropped,
		CallerMismatches: h.callerMismatches.Load(), CallerSessionsRefused: h.callerLimited.Load(),
		SessionRequestsRefused: h.requestLimited.Load()}
}

// refused records a notification refused because its queue was full
// (mcp-go reports it to direct senders, but swallows it for broadcasts).
// It is logged at Warn: always when it squeezed a stream, else on the 1st,
// 10th, 100th... refusal, so a flood cannot flood the log too.
func (h *Handler) refused(sessionID, queue string, size int, squeezed bool) {
	n := h.refusedCount.Add(1)
	h.met.refusedMessage()
	if !squeezed && !isPowerOf10(n) {
		return
	}
	h.log.Warn("lifeline: queue full; notification refused",
		"session", logID(sessionID), "queue", queue, "size", size,
		"stream_squeezed", squeezed, "refused_total", n)
}

func isPowerOf10(n int64) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}
