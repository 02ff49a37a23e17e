package streamable

import (
	"context"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// requestSession is the ClientSession mcp-go sees while it handles one POSTed
// request. It shares everything with its session except where messages go:
// notifications and server requests sent through it (progress, logging,
// sampling during a tool call) travel on that POST's response, while
// messages sent to the session by id or broadcast reach the session itself
// and travel on the GET stream.
type requestSession struct {
	*session
	notifications chan mcp.JSONRPCNotification
	requests      chan []byte
	stream        atomic.Pointer[sseStream] // the POST's SSE stream, once upgraded
}

func newRequestSession(s *session) *requestSession {
	return &requestSession{
		session:       s,
		notifications: make(chan mcp.JSONRPCNotification, s.h.cfg.QueueSize),
		requests:      make(chan []byte, s.h.cfg.QueueSize),
	}
}

// NotificationChannel implements server.ClientSession for this request.
func (r *requestSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return r.notifications
}

// UpgradeToSSEWhenReceiveNotification implements
// server.SessionWithStreamableHTTPConfig for the request's queue: on
// overflow mcp-go refuses the send and the request's stream is squeezed, so
// that a client that stopped reading loses it (which ends the request).
func (r *requestSession) UpgradeToSSEWhenReceiveNotification() {
	if len(r.notifications) < cap(r.notifications) {
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
	return r.requestSampling(ctx, r.requests, req)
}

// RequestElicitation implements server.SessionWithElicitation on the POST stream.
func (r *requestSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return r.requestElicitation(ctx, r.requests, req)
}

// ListRoots implements server.SessionWithRoots on the POST stream.
func (r *requestSession) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return r.listRoots(ctx, r.requests, req)
}
