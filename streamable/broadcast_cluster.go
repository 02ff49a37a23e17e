package streamable

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// With a shared store that is a sessionstore.Broadcaster, a broadcast is
// delivered by the replica holding each stream, whichever replica raised
// it. The tap (broadcast.go) publishes what mcp-go broadcasts here on the
// store's broadcast bus; every replica's broadcast listener (its own
// included) receives it and hands it to the streams it holds: its listen
// streams, and the GET streams of the sessions whose stream it holds. So
// that each stream gets a broadcast once, mcp-go's own delivery to
// sessions is turned off: in this mode a session reports an active, empty
// subscription filter (session.SubscriptionFilter), which mcp-go's
// fan-out honours by skipping it (the tap has none, so it gets everything).
//
// Every replica may raise the same broadcast by itself at the same moment
// (each registering the same tools after New, say). A client must not get
// it once per replica, so the listener treats a broadcast identical, byte
// for byte, to one another replica raised less than broadcastDedupWindow
// earlier as the same event, and drops it. Broadcasts from one replica are
// never merged this way: each is an event of its own (a listen stream
// still coalesces identical ones it has not written yet).

// broadcastDedupWindow is how close together identical broadcasts from
// different replicas must be to count as one event.
const broadcastDedupWindow = time.Second

// maxDedupEntries bounds the listener's memory of recent broadcasts; past
// it, the oldest are forgotten (a duplicate may then get through).
const maxDedupEntries = 4096

// broadcastFrame is what goes on the store's broadcast bus.
type broadcastFrame struct {
	Origin string          `json:"o"` // the raising replica (Handler.holder)
	Note   json.RawMessage `json:"n"` // the notification
}

// clusterBroadcaster returns the store's broadcast bus, when broadcasts go
// across replicas.
func (h *Handler) clusterBroadcaster() sessionstore.Broadcaster {
	if !h.shared {
		return nil
	}
	b, _ := h.cfg.Store.(sessionstore.Broadcaster)
	return b
}

// startBroadcastListener subscribes to the store's broadcast bus and starts
// the goroutine delivering what arrives; Shutdown stops and joins it
// (stopBroadcastListener). If the store cannot be subscribed to, broadcasts
// stay local to each replica, and that is logged.
func (h *Handler) startBroadcastListener(b sessionstore.Broadcaster) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.CleanupTimeout)
	defer cancel()
	sub, err := b.SubscribeBroadcasts(ctx)
	if err != nil {
		h.log.Error("lifeline: cannot subscribe to the store's broadcasts; broadcasts reach only the streams this replica holds", "err", err)
		return
	}
	h.bcastSub = sub
	h.bcastDone = make(chan struct{})
	h.clusterBcast = true
	go h.listenBroadcasts(sub)
}

func (h *Handler) stopBroadcastListener() {
	if h.bcastSub == nil {
		return
	}
	_ = h.bcastSub.Close()
	<-h.bcastDone
}

// listenBroadcasts delivers each broadcast received, once per event.
func (h *Handler) listenBroadcasts(sub sessionstore.Subscription) {
	defer close(h.bcastDone)
	seen := make(map[string]dedupEntry)
	for msg := range sub.Messages() {
		var f broadcastFrame
		if json.Unmarshal(msg, &f) != nil {
			h.log.Warn("lifeline: ignoring a malformed broadcast from the store")
			continue
		}
		now := time.Now()
		key := string(f.Note)
		if e, ok := seen[key]; ok && e.origin != f.Origin && now.Sub(e.at) < broadcastDedupWindow {
			continue // another replica raised the same broadcast at the same moment
		}
		rememberBroadcast(seen, key, f.Origin, now)
		var n mcp.JSONRPCNotification
		if json.Unmarshal(f.Note, &n) != nil {
			continue
		}
		h.deliverBroadcast(n)
	}
}

// dedupEntry is when, and from which replica, a broadcast last arrived.
type dedupEntry struct {
	origin string
	at     time.Time
}

// rememberBroadcast records key, forgetting entries older than the window
// and, past maxDedupEntries, the oldest.
func rememberBroadcast(seen map[string]dedupEntry, key, origin string, now time.Time) {
	if len(seen) >= maxDedupEntries {
		for k, e := range seen {
			if now.Sub(e.at) >= broadcastDedupWindow {
				delete(seen, k)
			}
		}
		for k := range seen {
			if len(seen) < maxDedupEntries {
				break
			}
			delete(seen, k)
		}
	}
	seen[key] = dedupEntry{origin: origin, at: now}
}

// publishBroadcast puts a broadcast raised here on the store's bus; if the
// store fails, it is delivered here only, and that is logged.
func (h *Handler) publishBroadcast(b sessionstore.Broadcaster, n mcp.JSONRPCNotification) {
	note, err := json.Marshal(n)
	if err != nil {
		h.log.Error("lifeline: dropping a broadcast that does not encode", "method", n.Method, "err", err)
		return
	}
	frame, _ := json.Marshal(broadcastFrame{Origin: h.holder, Note: note})
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.CleanupTimeout)
	defer cancel()
	if err := b.PublishBroadcast(ctx, frame); err != nil {
		h.log.Warn("lifeline: the store could not carry a broadcast to the other replicas; delivered on this one only",
			"method", n.Method, "err", err)
		h.deliverBroadcast(n)
	}
}

// deliverBroadcast hands a broadcast to the streams this replica holds:
// its listen streams and, with replicas, the GET streams of sessions whose
// stream is here (alone, mcp-go delivers to sessions itself).
func (h *Handler) deliverBroadcast(n mcp.JSONRPCNotification) {
	h.listens.offer(n)
	if !h.clusterBcast {
		return
	}
	for _, s := range h.snapshot() {
		if s.modern || !s.active() || s.liveGet() == nil {
			continue
		}
		s.UpgradeToSSEWhenReceiveNotification()
		select {
		case s.NotificationChannel() <- n:
		default: // refused and counted, as mcp-go's own send would be
		}
	}
}

// SetSubscriptionFilter implements server.SessionWithSubscriptionFilter; a
// session of the session era has no subscription.
func (s *session) SetSubscriptionFilter(mcp.SubscriptionFilter) {}

// SubscriptionFilter implements server.SessionWithSubscriptionFilter: with
// broadcasts across replicas, an active empty filter, so that mcp-go's
// fan-out skips the session and the replica holding its stream delivers
// the broadcast instead (deliverBroadcast). Otherwise none: mcp-go
// delivers every broadcast to it.
func (s *session) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	return mcp.SubscriptionFilter{}, s.h.clusterBcast
}
