package streamable

import (
	"bytes"
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
// streams, and the GET streams of the sessions whose stream it holds. A
// session whose stream no replica holds gets it from the replica that held
// its stream last (or created it): there it waits in the session's queue,
// and the pump carries it to the next stream, wherever it opens
// (idleDeliveries). So that each stream gets a broadcast once, mcp-go's own
// delivery to sessions is turned off while the listener is subscribed: a
// session then reports an active, empty subscription filter
// (session.SubscriptionFilter), which mcp-go's fan-out honours by skipping
// it (the tap has none, so it gets everything).
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

// firstSubscribeWait is how long New waits for the first subscription to
// the store's broadcasts; the listener keeps trying after it.
const firstSubscribeWait = time.Second

// Backoff of the listener's subscription attempts.
const (
	minSubscribeBackoff = 100 * time.Millisecond
	maxSubscribeBackoff = 2 * time.Second
)

// idleDeliveryQueue bounds the broadcasts waiting to be kept for sessions
// whose stream no replica holds; past it they are dropped, counted in
// Stats.DroppedMessages and logged.
const idleDeliveryQueue = 256

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
	return h.store.broadcaster()
}

// startBroadcastListener starts the listener goroutine and waits up to
// firstSubscribeWait for its first subscription; Shutdown stops and joins
// it (stopBroadcastListener).
func (h *Handler) startBroadcastListener(b sessionstore.Broadcaster) {
	h.bcastCtx, h.bcastCancel = context.WithCancel(context.Background())
	h.bcastDone = make(chan struct{})
	h.idleDone = make(chan struct{})
	h.idleJobs = make(chan idleDelivery, idleDeliveryQueue)
	ready := make(chan struct{})
	go h.listenBroadcasts(b, ready)
	go h.idleDeliveries()
	t := time.NewTimer(firstSubscribeWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	}
}

// stopBroadcastListener cuts the listener's store calls short and joins
// it, bounded by ctx too.
func (h *Handler) stopBroadcastListener(ctx context.Context) {
	if h.bcastCancel == nil {
		return
	}
	h.bcastCancel()
	for _, done := range []chan struct{}{h.bcastDone, h.idleDone} {
		select {
		case <-done:
		case <-ctx.Done():
			h.log.Warn("lifeline: Shutdown's context ended before the broadcast listener stopped")
			return
		}
	}
}

// listenBroadcasts subscribes to the store's broadcasts, retrying with
// backoff while it cannot, and delivers what arrives, once per event.
// While it is not subscribed, broadcasts stay on the replica that raised
// them (clusterBcast false: mcp-go delivers to sessions itself). ready is
// closed after the first attempt.
func (h *Handler) listenBroadcasts(b sessionstore.Broadcaster, ready chan struct{}) {
	defer close(h.bcastDone)
	defer close(h.idleJobs) // idleDeliveries drains and exits
	backoff := minSubscribeBackoff
	logged := false
	for {
		ctx, cancel := context.WithTimeout(h.bcastCtx, h.cfg.CleanupTimeout)
		sub, err := b.SubscribeBroadcasts(ctx)
		cancel()
		if err == nil {
			h.clusterBcast.Store(true)
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		if err != nil {
			if h.bcastCtx.Err() != nil {
				return
			}
			if !logged {
				h.log.Error("lifeline: cannot subscribe to the store's broadcasts; until it can, broadcasts reach only this replica's streams", "err", err)
				logged = true
			}
			t := time.NewTimer(backoff)
			select {
			case <-h.bcastCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxSubscribeBackoff)
			continue
		}
		if logged {
			h.log.Info("lifeline: subscribed to the store's broadcasts again")
			logged = false
		}
		backoff = minSubscribeBackoff
		h.consumeBroadcasts(sub)
		_ = sub.Close()
		h.clusterBcast.Store(false)
		if h.bcastCtx.Err() != nil {
			return
		}
	}
}

// consumeBroadcasts delivers what sub receives until it ends or Shutdown.
func (h *Handler) consumeBroadcasts(sub sessionstore.Subscription) {
	seen := make(map[string]dedupEntry)
	drops, _ := h.cfg.Store.(sessionstore.BroadcastDropCounter)
	var lastDrops uint64
	for {
		var msg []byte
		var ok bool
		select {
		case msg, ok = <-sub.Messages():
			if !ok {
				return
			}
			h.met.received()
		case <-h.bcastCtx.Done():
			return
		}
		h.receiveBroadcast(seen, msg)
		if drops != nil {
			if d := drops.BroadcastsDropped(); d > lastDrops {
				h.log.Warn("lifeline: this replica's broadcast subscription was full; broadcasts were lost here",
					"dropped_total", d)
				lastDrops = d
			}
		}
	}
}

// receiveBroadcast delivers one frame, unless another replica raised the
// same broadcast within the window.
func (h *Handler) receiveBroadcast(seen map[string]dedupEntry, msg []byte) {
	var f broadcastFrame
	if json.Unmarshal(msg, &f) != nil {
		h.log.Warn("lifeline: ignoring a malformed broadcast from the store")
		return
	}
	now := time.Now()
	key := string(f.Note)
	if e, ok := seen[key]; ok && e.origin != f.Origin && now.Sub(e.at) < broadcastDedupWindow {
		return // another replica raised the same broadcast at the same moment
	}
	rememberBroadcast(seen, key, f.Origin, now)
	n, err := decodeNotification(f.Note)
	if err != nil {
		h.log.Warn("lifeline: ignoring a broadcast that does not decode", "err", err)
		return
	}
	h.deliverBroadcast(n)
}

// decodeNotification decodes a notification keeping its numbers exact
// (json.Number): a broadcast reaches clients as it was raised.
func decodeNotification(raw []byte) (mcp.JSONRPCNotification, error) {
	var m struct {
		JSONRPC string         `json:"jsonrpc"`
		Method  string         `json:"method"`
		Params  map[string]any `json:"params"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return mcp.JSONRPCNotification{}, err
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: m.Method}}
	if meta, ok := m.Params["_meta"].(map[string]any); ok {
		n.Params.Meta = meta
		delete(m.Params, "_meta")
	}
	if len(m.Params) > 0 {
		n.Params.AdditionalFields = m.Params
	}
	return n, nil
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
	ctx, cancel := context.WithTimeout(h.bcastCtx, h.cfg.CleanupTimeout)
	defer cancel()
	if err := b.PublishBroadcast(ctx, frame); err != nil {
		h.log.Warn("lifeline: the store could not carry a broadcast to the other replicas; delivered on this one only",
			"method", n.Method, "err", err)
		h.deliverHere(n)
	}
}

// deliverBroadcast hands a broadcast to the streams this replica holds:
// its listen streams and, with replicas, the GET streams of sessions whose
// stream is here (alone, mcp-go delivers to sessions itself). Sessions
// this replica held the stream of last, or created, and that have none
// here now, are left to idleDeliveries.
func (h *Handler) deliverBroadcast(n mcp.JSONRPCNotification) {
	h.listens.offer(n)
	var idle []*session
	for _, s := range h.snapshot() {
		if s.modern || !s.active() || !s.Initialized() {
			continue
		}
		// A session with a broadcast still in the idle deliverer's hands
		// gets this one through it too, in order.
		if s.liveGet() == nil || s.idlePending.Load() > 0 {
			if s.home {
				idle = append(idle, s)
			}
			continue
		}
		h.enqueueBroadcast(s, n)
	}
	if len(idle) == 0 {
		return
	}
	for _, s := range idle {
		s.idlePending.Add(1)
	}
	select {
	case h.idleJobs <- idleDelivery{n: n, sessions: idle}:
	default:
		for _, s := range idle {
			s.idlePending.Add(-1)
		}
		d := h.droppedCount.Add(int64(len(idle)))
		h.log.Warn("lifeline: too many broadcasts waiting for sessions without a stream; dropped",
			"sessions", len(idle), "dropped_total", d)
	}
}

// deliverHere delivers a broadcast that does not go over the store (the
// listener is not subscribed, or the store failed) to this replica's
// streams and every session copy here, as mcp-go would alone: a copy's pump
// carries it to the session's stream wherever it is held.
func (h *Handler) deliverHere(n mcp.JSONRPCNotification) {
	h.listens.offer(n)
	for _, s := range h.snapshot() {
		// An ephemeral session (stateless, 2026-07-28) has no GET stream
		// to carry a broadcast: mcp-go, never handed it, would skip it too.
		if !s.stateless && s.active() && s.Initialized() {
			h.enqueueBroadcast(s, n)
		}
	}
}

// enqueueBroadcast puts n on the session's GET queue, as mcp-go would.
func (h *Handler) enqueueBroadcast(s *session, n mcp.JSONRPCNotification) {
	s.UpgradeToSSEWhenReceiveNotification()
	select {
	case s.NotificationChannel() <- n:
	default: // refused and counted, as mcp-go's own send would be
	}
}

// idleDelivery is a broadcast for sessions whose stream this replica does
// not hold but held last.
type idleDelivery struct {
	n        mcp.JSONRPCNotification
	sessions []*session
}

// idleDeliveries keeps each broadcast for the sessions created here whose
// stream no replica holds now, in order, until the listener closes
// idleJobs.
func (h *Handler) idleDeliveries() {
	defer close(h.idleDone)
	defer func() { // after Shutdown cut it short: release what is left
		for job := range h.idleJobs {
			for _, s := range job.sessions {
				s.idlePending.Add(-1)
			}
		}
	}()
	for job := range h.idleJobs {
		for _, s := range job.sessions {
			h.keepForNextStream(s, job.n)
			s.idlePending.Add(-1)
		}
	}
}

// SetSubscriptionFilter implements server.SessionWithSubscriptionFilter; a
// session of the session era has no subscription.
func (s *session) SetSubscriptionFilter(mcp.SubscriptionFilter) {}

// SubscriptionFilter implements server.SessionWithSubscriptionFilter: with
// a shared Broadcaster store, an active empty filter, so that mcp-go's
// fan-out skips the session and lifeline's tap alone decides where each
// broadcast goes (broadcast.go), whether the listener is subscribed or
// not. Otherwise none: mcp-go delivers every broadcast to it.
func (s *session) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	return mcp.SubscriptionFilter{}, s.h.bcastShared
}

// keepForNextStream puts n in the queue of s, a session created here,
// unless another replica holds its stream (one StreamHolder call): that
// replica delivers it. The pump carries it to the next stream wherever it
// opens. If the store fails, n is kept (at least once); once Shutdown began,
// nothing is kept.
func (h *Handler) keepForNextStream(s *session, n mcp.JSONRPCNotification) {
	if h.bcastCtx.Err() != nil {
		return
	}
	if s.liveGet() != nil {
		h.enqueueBroadcast(s, n) // its stream is here now
		return
	}
	ctx, cancel := context.WithTimeout(h.bcastCtx, h.cfg.CleanupTimeout)
	lease, held, err := h.store.StreamHolder(ctx, s.id)
	cancel()
	if err == nil && held && !h.isLocalHolder(lease.Holder) {
		return
	}
	h.enqueueBroadcast(s, n)
}
