package streamable

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What mcp-go broadcasts (MCPServer.SendNotificationToAllClients: list
// changes when tools, prompts or resources are added or removed, and
// whatever an application broadcasts) reaches every session registered with
// the MCPServer. lifeline registers one more, the broadcast tap: a session
// that is never a client's, with no filter, whose channel one goroutine
// drains. Through it, lifeline hands every broadcast to its listen streams
// (listen.go), which mcp-go cannot reach: they are not registered (mcp-go
// keeps its own registration of listen sessions unexported), and with
// replicas the broadcast goes over the store to every replica
// (broadcast_cluster.go).
//
// The tap is registered when the first listen stream opens (with a shared
// store, at New), and unregistered by Shutdown, which joins its goroutine.
// Its id, "lifeline-broadcast-tap-<random>", is what mcp-go's
// OnRegisterSession hooks see.

// tapQueue is how many broadcasts the tap holds before a broadcaster waits
// for its goroutine to take one.
const tapQueue = 256

// broadcastTap is the session mcp-go broadcasts to for lifeline.
type broadcastTap struct {
	h  *Handler
	id string
	ch chan mcp.JSONRPCNotification
	// tokens holds one token per broadcast between the broadcaster's
	// UpgradeToSSEWhenReceiveNotification and the goroutine's receive, at
	// most cap(ch): mcp-go's non-blocking send that follows always finds
	// room, however many broadcasters race for it.
	tokens chan struct{}

	stop chan struct{}
	done chan struct{}
}

// SessionID implements server.ClientSession.
func (t *broadcastTap) SessionID() string { return t.id }

// NotificationChannel implements server.ClientSession.
func (t *broadcastTap) NotificationChannel() chan<- mcp.JSONRPCNotification { return t.ch }

// Initialize implements server.ClientSession.
func (t *broadcastTap) Initialize() {}

// Initialized implements server.ClientSession: mcp-go broadcasts only to
// initialized sessions.
func (t *broadcastTap) Initialized() bool { return true }

// UpgradeToSSEWhenReceiveNotification implements
// server.SessionWithStreamableHTTPConfig: mcp-go calls it right before its
// non-blocking send. It takes a token for the send, waiting while the
// queue is full for the tap's goroutine (which never waits on a client)
// to take one, at most the stall threshold. A broadcast that got no token
// then is counted and logged as dropped (mcp-go's send may still find
// room, or is refused).
func (t *broadcastTap) UpgradeToSSEWhenReceiveNotification() {
	select {
	case t.tokens <- struct{}{}:
		return
	default:
	}
	timer := time.NewTimer(t.h.stallThreshold())
	defer timer.Stop()
	select {
	case t.tokens <- struct{}{}:
	case <-timer.C:
		n := t.h.droppedCount.Add(1)
		t.h.log.Warn("lifeline: broadcast queue full; a broadcast was dropped",
			"queue", cap(t.ch), "dropped_total", n)
	case <-t.stop:
	}
}

// run hands each broadcast on, until stopped (stop is checked first).
func (t *broadcastTap) run() {
	defer close(t.done)
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		select {
		case n := <-t.ch:
			select {
			case <-t.tokens:
			default: // sent without a token, after a broadcaster timed out
			}
			t.h.broadcast(n)
		case <-t.stop:
			return
		}
	}
}

// ensureTap registers the tap and starts its goroutine, once; not after
// Shutdown began.
func (h *Handler) ensureTap() {
	h.tapOnce.Do(func() {
		if h.isShutting() {
			return
		}
		t := &broadcastTap{h: h, id: "lifeline-broadcast-tap-" + h.holder,
			ch: make(chan mcp.JSONRPCNotification, tapQueue), tokens: make(chan struct{}, tapQueue),
			stop: make(chan struct{}), done: make(chan struct{})}
		// Registered outside h.mu: mcp-go runs its hooks.
		if err := h.mcp.RegisterSession(context.Background(), t); err != nil {
			h.log.Error("lifeline: the broadcast tap could not be registered; listen streams get no broadcasts", "err", err)
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.shutting {
			h.mcp.UnregisterSession(context.Background(), t.id)
			return
		}
		h.tap = t
		go t.run()
	})
}

// stopTap unregisters the tap and joins its goroutine (Shutdown), whose
// publication in progress, if any, is cut short (bcastCancel); the wait is
// bounded by ctx too.
func (h *Handler) stopTap(ctx context.Context) {
	h.mu.Lock()
	t := h.tap
	h.mu.Unlock()
	if t == nil {
		return
	}
	h.mcp.UnregisterSession(context.Background(), t.id)
	close(t.stop)
	select {
	case <-t.done:
	case <-ctx.Done():
		h.log.Warn("lifeline: Shutdown's context ended before the broadcast tap stopped")
	}
}

// broadcast delivers one broadcast mcp-go raised here: to every replica
// through the store (broadcast_cluster.go), or alone to this process's
// listen streams.
func (h *Handler) broadcast(n mcp.JSONRPCNotification) {
	switch {
	case h.clusterBcast.Load():
		h.publishBroadcast(h.store.broadcaster(), n)
	case h.bcastShared:
		h.deliverHere(n) // not subscribed: what mcp-go would do alone
	default:
		h.listens.offer(n) // alone, mcp-go delivers to sessions itself
	}
}

// IsBroadcastTap reports whether cs is the session lifeline registers with
// the MCPServer to receive its broadcasts (for listen streams, and for
// other replicas), rather than a client's: an OnRegisterSession hook that
// keeps clients' sessions skips it.
func IsBroadcastTap(cs server.ClientSession) bool {
	_, ok := cs.(*broadcastTap)
	return ok
}
