package streamable

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// requestSession is the ClientSession mcp-go sees while it handles one POSTed
// request. It shares everything with its session except where messages go:
// notifications and server requests sent through it (progress, logging,
// sampling during a tool call) travel on that POST's response, while
// messages sent to the session by id or broadcast reach the session itself
// and travel on the GET stream.
//
// Its queues are made on first use: most requests send nothing. ready
// (made on first use too, by the queues or by the writer) tells the
// writing loop when they exist. They are small (RequestQueueSize):
// a tool that sends faster than the writer drains them waits for room, so
// a burst costs the tool time instead of the request memory.
type requestSession struct {
	*session
	once          sync.Once
	notifications chan mcp.JSONRPCNotification // set once, before ready
	requests      chan []byte                  // set once, before ready
	roomMu        sync.Mutex                   // guards room and ready
	room          chan struct{}                // closed when the writer takes something; made by a waiting sender
	ready         chan struct{}                // one value once the queues exist (readySignal)
	onFirstUse    func()                       // starts the request's writer
	stream        atomic.Pointer[sseStream]    // the POST's SSE stream, once upgraded
	returned      <-chan struct{}              // closed once the request has returned (its context's end)
	closed        atomic.Bool                  // the request's writer has stopped: nothing more reaches its stream
	made          atomic.Bool                  // the queues exist (set after them, for close)
	gone          chan struct{}                // made with the queues; closed by close: calls still queued fail
	feed          *listenFeed                  // a listen stream's (listen.go), else nil
	post          *postStream                  // the request's response (CloseSSEStream), else nil
}

// init prepares r as a request's session on s; onFirstUse runs once,
// after the queues are made (it starts the request's writer); returned
// closes when the request has returned.
func (r *requestSession) init(s *session, onFirstUse func(), returned <-chan struct{}) {
	r.session, r.onFirstUse, r.returned = s, onFirstUse, returned
}

// queues makes the request's queues on first use and returns them.
func (r *requestSession) queues() (chan mcp.JSONRPCNotification, chan []byte) {
	r.once.Do(func() {
		r.notifications = make(chan mcp.JSONRPCNotification, r.h.cfg.RequestQueueSize)
		r.requests = make(chan []byte, r.h.cfg.RequestQueueSize)
		r.gone = make(chan struct{})
		r.made.Store(true)
		r.readySignal() <- struct{}{}
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
// server.SessionWithStreamableHTTPConfig for the request's queue. mcp-go
// calls it on the sending goroutine just before its non-blocking send: a
// full queue makes the sender wait for the writer to take something, up to
// the stall threshold (at most 1 s). If it is still full then (a client
// that stopped reading), mcp-go refuses the send and the request's stream
// is squeezed, so that the client loses it (which ends the request).
func (r *requestSession) UpgradeToSSEWhenReceiveNotification() {
	n, _ := r.queues()
	if len(n) < cap(n) || r.awaitRoom(n) {
		r.h.met.queuedMessage()
		return
	}
	squeezed := false
	if st := r.stream.Load(); st != nil {
		squeezed = st.squeeze(r.h.stallThreshold())
	}
	if squeezed {
		r.h.met.squeezed()
	}
	r.h.refused(r.id, "request", cap(r.notifications), squeezed)
}

// awaitRoom waits until n has room, bounded by the stall threshold and by
// the request's end, and reports whether it has. Every waiting sender is
// woken each time the writer takes something. Senders on several
// goroutines can still race for the last free slot between this wait and
// mcp-go's send: the loser's send is refused (it gets mcp-go's
// ErrNotificationChannelBlocked) without being counted in Stats.
func (r *requestSession) awaitRoom(n chan mcp.JSONRPCNotification) bool {
	t := time.NewTimer(r.h.stallThreshold())
	defer t.Stop()
	for len(n) == cap(n) {
		room := r.roomSignal()
		if len(n) < cap(n) { // the writer took something before we listened
			break
		}
		select {
		case <-room:
		case <-t.C:
			return len(n) < cap(n)
		case <-r.returned:
			return len(n) < cap(n)
		}
	}
	return true
}

// roomSignal returns the channel madeRoom closes next.
func (r *requestSession) roomSignal() <-chan struct{} {
	r.roomMu.Lock()
	defer r.roomMu.Unlock()
	if r.room == nil {
		r.room = make(chan struct{})
	}
	return r.room
}

// readySignal returns the channel that holds a value once the queues
// exist, making it on first use.
func (r *requestSession) readySignal() chan struct{} {
	r.roomMu.Lock()
	defer r.roomMu.Unlock()
	if r.ready == nil {
		r.ready = make(chan struct{}, 1)
	}
	return r.ready
}

// madeRoom wakes every sender waiting in awaitRoom: the writer took
// something from the queues. Only the writer calls it.
func (r *requestSession) madeRoom() {
	r.roomMu.Lock()
	defer r.roomMu.Unlock()
	if r.room != nil {
		close(r.room)
		r.room = nil
	}
}

// RequestSampling implements server.SessionWithSampling on the POST stream.
func (r *requestSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if err := r.ended(); err != nil {
		return nil, err
	}
	n, q := r.queues()
	return r.requestSampling(ctx, callRoute{requests: q, notes: n, closed: r.gone}, req)
}

// RequestElicitation implements server.SessionWithElicitation on the POST stream.
func (r *requestSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if err := r.ended(); err != nil {
		return nil, err
	}
	n, q := r.queues()
	return r.requestElicitation(ctx, callRoute{requests: q, notes: n, closed: r.gone}, req)
}

// ListRoots implements server.SessionWithRoots on the POST stream.
func (r *requestSession) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if err := r.ended(); err != nil {
		return nil, err
	}
	n, q := r.queues()
	return r.listRoots(ctx, callRoute{requests: q, notes: n, closed: r.gone}, req)
}

// errRequestReturned refuses a server-to-client request made through a
// request's session after that request ended: its stream is gone, so
// nothing would ever carry it to the client.
var errRequestReturned = errors.New("lifeline: the request this session belongs to has ended; its stream can carry nothing more")

// ended reports errRequestReturned once the request has ended, or its
// writer has stopped.
func (r *requestSession) ended() error {
	if r.closed.Load() {
		return errRequestReturned
	}
	select {
	case <-r.returned:
		return errRequestReturned
	default:
		return nil
	}
}

// close marks the request's stream as taking nothing more, and fails the
// server-to-client requests still queued for it: a call made as the writer
// stopped would otherwise wait for an answer that cannot come. Called once
// the writer has stopped.
func (r *requestSession) close() {
	r.closed.Store(true)
	if !r.made.Load() {
		return
	}
	// A call that passed ended() as this ran may queue its request after
	// the drain below: it sees gone and withdraws it itself.
	close(r.gone)
	for {
		select {
		case m := <-r.requests:
			r.calls.undeliverable(m, errRequestReturned)
		default:
			return
		}
	}
}
