package streamable

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// requestSession is the ClientSession mcp-go sees while it handles one POSTed
// request. It shares everything with its session except where messages go:
// notifications and server requests sent through it (progress, logging,
// sampling during a tool call) travel on that POST's response, while
// messages sent to the session by id or broadcast reach the session itself
// and travel on the GET stream.
//
// Its queues are made on first use: most requests send nothing, and a
// request must not pay for two QueueSize channels it never fills. ready
// tells the writing loop when they exist.
type requestSession struct {
	*session
	once          sync.Once
	notifications chan mcp.JSONRPCNotification // set once, before ready
	requests      chan []byte                  // set once, before ready
	ready         chan struct{}                // one value once the queues exist
	onFirstUse    func()                       // starts the request's writer
	stream        atomic.Pointer[sseStream]    // the POST's SSE stream, once upgraded
}

// init prepares r as a request's session on s; onFirstUse runs once,
// after the queues are made (it starts the request's writer).
func (r *requestSession) init(s *session, onFirstUse func()) {
	r.session, r.ready, r.onFirstUse = s, make(chan struct{}, 1), onFirstUse
}

// queues makes the request's queues on first use and returns them.
func (r *requestSession) queues() (chan mcp.JSONRPCNotification, chan []byte) {
	r.once.Do(func() {
		r.notifications = make(chan mcp.JSONRPCNotification, r.h.cfg.RequestQueueSize)
		r.requests = make(chan []byte, r.h.cfg.RequestQueueSize)
		r.ready <- struct{}{}
		if r.onFirstUse != nil {
			r.onFirstUse()
		}
	})
	return r.notifications, r.requests
}

// NotificationChannel implements server.ClientSession for this request.
func (r *requestSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	n, _ := r.queues()
	return n
}

// UpgradeToSSEWhenReceiveNotification implements
// server.SessionWithStreamableHTTPConfig for the request's queue: on
// overflow mcp-go refuses the send and the request's stream is squeezed, so
// that a client that stopped reading loses it (which ends the request).
func (r *requestSession) UpgradeToSSEWhenReceiveNotification() {
	if n, _ := r.queues(); len(n) < cap(n) {
		return
	}
	squeezed := false
	if st := r.stream.Load(); st != nil {
		squeezed = st.squeeze(r.h.stallThreshold())
	}
	r.h.refused(r.id, "request", cap(r.notifications), squeezed)
}

// RequestSampling implements server.SessionWithSampling on the POST stream.
func (r *requestSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	_, q := r.queues()
	return r.requestSampling(ctx, q, req)
}

// RequestElicitation implements server.SessionWithElicitation on the POST stream.
func (r *requestSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	_, q := r.queues()
	return r.requestElicitation(ctx, q, req)
}

// ListRoots implements server.SessionWithRoots on the POST stream.
func (r *requestSession) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	_, q := r.queues()
	return r.listRoots(ctx, q, req)
}
