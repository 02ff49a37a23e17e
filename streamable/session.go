package streamable

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
)

// Session states. A session only moves forward: active, terminating (DELETE,
// expiry or Shutdown has begun: no new stream or request starts), terminated
// (its streams and workers are gone and it is unregistered).
const (
	stateActive int32 = iota
	stateTerminating
	stateTerminated
)

// Termination causes, seen by pending server-to-client requests and logs.
var (
	errDeleted  = errors.New("session terminated by DELETE")
	errExpired  = errors.New("session expired after its idle TTL")
	errShutdown = errors.New("server shutting down")
	// errDiscarded: a session whose initialize failed; its record is
	// removed (Store.Remove), not terminated, so it leaves no tombstone.
	errDiscarded = errors.New("session discarded: its initialize failed")
	// errDeletedInStore: DELETE with a shared store, which terminated the
	// record itself before ending the local copy.
	errDeletedInStore = errors.New("session terminated by DELETE")
)

// session is one MCP session: the server.ClientSession handed to mcp-go and
// the transport's lifecycle state for it.
//
// Its small fields sit together, and what only replicas use is behind rep,
// so that a session fits in 512 bytes: the runtime allocates a larger
// object with pointers on a path of its own (mallocgcSmallScanHeader), and
// a 2026-07-28 request makes a session of its own
// (TestSessionFitsASmallObject).
type session struct {
	mcpState
	h  *Handler
	id string
	// spanAttr is the mcp.session.id span attribute, made on first use
	// (spanID).
	spanAttr atomic.Pointer[attribute.KeyValue]

	// lc is the session's context (ctx), which ends when the session
	// starts terminating: what is recorded for the session (a resumable
	// response, a GET stream's priming event), a resumed POST stream, a
	// pending server-to-client request and, with replicas, the pump, the
	// watch and a lingering topic end with it. A session-era session makes
	// it at once (newSession); an ephemeral one on first use, since a
	// 2026-07-28 request's session usually ends without anything having
	// asked for it.
	lc atomic.Pointer[sessionContext]
	// endedBy points to the cause the session started terminating with
	// (the first one given: endContext), nil while it is active.
	endedBy atomic.Pointer[error]

	// q holds the queues bound for the standalone GET stream, made on
	// first use (queues). Only the live GET handler (or, with replicas, the
	// pump) reads them; between streams they stay queued for the next one.
	q     atomic.Pointer[sessionQueues]
	qMade chan struct{} // closed once q is set
	// Until q is made, what mcp-go sends lands in small, a few slots that
	// each send empties into held (idle_queue.go): a session without a
	// stream holds what it is sent, not two QueueSize channels.
	small atomic.Pointer[chan mcp.JSONRPCNotification]

	life  sync.Mutex // serializes creation and GET admission with termination
	state atomic.Int32

	// With replicas: CloseSessions is terminating the session's record
	// here (close_sessions.go), so a watch or stream that sees its end in
	// the store ends the local copy as closed, not as ended elsewhere.
	closingHere atomic.Bool
	// With broadcasts across replicas (broadcast_cluster.go): how many
	// broadcasts for the session the idle deliverer has not handled yet.
	idlePending atomic.Int32

	// Set before the session is shared, never changed: stateless, an
	// ephemeral session serving one stateless request; modern, stateless
	// too, serving one 2026-07-28 request; listen, modern too, serving a
	// subscriptions/listen stream; counted, it counts toward its caller's
	// MaxSessionsPerCaller here (it was created here, not adopted); home,
	// with broadcasts across replicas, this replica created the session,
	// so it keeps broadcasts for the session's next stream while no
	// replica holds one.
	stateless, modern, listen, counted, home bool

	mu      sync.Mutex              // guards the fields from resumes to held, and rep's parts (not the pointer)
	resumes int32                   // open resumed POST streams (resume_post.go)
	get     *getStream              // the live GET stream
	carry   []carried               // messages a failed stream took but could not write
	posts   map[*sseStream]struct{} // made on first use (addPostStream)
	work    int                     // running POST requests
	letGo   int32                   // running requests whose response was let go of (post_letgo.go)
	behind  int32                   // of work, requests that answered and whose record behind the write is pending (post_behind.go)
	// While terminating: the running requests were cancelled and their
	// writers squeezed (cancelRunning), or their writers closed
	// (interruptPosts). A writer tracked later gets the same.
	cancelled, interrupted bool
	// endedClosed: the session is terminated, and ended closed if made
	// (endedChan, closeEnded).
	endedClosed bool
	running     *postStream   // the running requests, linked by prevWork/nextWork
	idle        chan struct{} // closed when work drops to zero while terminating
	// ended is closed when the session is terminated; made on first use
	// (endedChan), since most sessions end without anything waiting for
	// them: a 2026-07-28 request's session is made and ended by its one
	// request.
	ended chan struct{}
	// With replicas, its pump, watch, lingering topic and touchedAt; nil
	// on a handler whose store is its own (bareSession). Set before the
	// session is shared, never changed.
	rep *replicaParts
	// What was taken off small, oldest first, until q is made.
	held []mcp.JSONRPCNotification

	calls callTable // under a lock of its own

	// opened is when the handler began holding the session (addSession,
	// under the handler's mu), for its metrics (metrics.go), as time since
	// the handler's epoch; zero for an ephemeral one.
	opened time.Duration

	// caller is the digest of the caller the session is bound to ("" for
	// none), set before the session is shared and never changed.
	caller string
}

// replicaParts is what a session keeps only with replicas (a shared
// store), guarded by the session's mu.
type replicaParts struct {
	// The goroutine forwarding the session's GET stream messages to the
	// replica holding its stream, if running (pump.go).
	pump pumpState
	// The goroutine watching the session's bus while it runs requests here
	// (cluster_watch.go).
	watch watchState
	// An ended stream's topic still read (cluster_linger.go).
	linger lingering
	// When this replica last extended the record's expiry (Unix ns;
	// session_touch.go); atomic, not guarded.
	touchedAt atomic.Int64
}

// newSession makes a session-era session, with its context made.
func newSession(h *Handler, id string) *session {
	s := bareSession(h, id)
	s.qMade = make(chan struct{})
	// A session-era session makes its context at once. With the event log
	// (the default) its GET stream's opening records a priming event with
	// it, and so does a resumable response that becomes a stream: made
	// there, its 120 bytes would be counted as the first stream's, not the
	// session's, in what an idle stream costs.
	s.ctx()
	return s
}

// bareSession is a session without qMade, which wakes a pump started
// before the session's queues were made (by a stream's end) once they are:
// what a session with GET streams needs.
func bareSession(h *Handler, id string) *session {
	s := &session{
		h:     h,
		id:    id,
		calls: newCallTable(h.callBase),
	}
	if h.shared {
		s.rep = &replicaParts{}
	}
	return s
}

// SessionID implements server.ClientSession.
func (s *session) SessionID() string { return s.id }

// NotificationChannel implements server.ClientSession: what mcp-go sends
// here goes on the session's GET stream.
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification {
	if q := s.q.Load(); q != nil {
		return q.notifications
	}
	if s.h.shared {
		return s.queues().notifications
	}
	return s.idleChannel()
}

// sessionQueues are a session's queues for its GET stream.
type sessionQueues struct {
	notifications chan mcp.JSONRPCNotification
	requests      chan []byte
}

// queues returns the session's queues, making them on first use: a
// session that is sent nothing while it has no stream (or pump) and makes
// no server request costs no QueueSize channels (which are most of a
// session's memory).
func (s *session) queues() *sessionQueues {
	if q := s.q.Load(); q != nil {
		return q
	}
	s.mu.Lock()
	q, made := s.makeQueuesLocked()
	g := s.get
	s.mu.Unlock()
	if made && g != nil {
		// A stream that found no queues waits to be told.
		g.signal()
	}
	return q
}

// queuedInQueues counts what waits in the queues, without making them.
// Callers hold s.mu.
func (s *session) queuedInQueues() int {
	n := len(s.held)
	if sm := s.small.Load(); sm != nil {
		n += len(*sm)
	}
	if q := s.q.Load(); q != nil {
		n += len(q.notifications) + len(q.requests)
	}
	return n
}

// UpgradeToSSEWhenReceiveNotification implements
// server.SessionWithStreamableHTTPConfig. mcp-go calls it just before each
// non-blocking send to NotificationChannel, which lets the transport see an
// overflow coming: mcp-go refuses the send (ErrNotificationChannelBlocked to
// the sender) and the GET stream is squeezed, so that if its client stopped
// reading it is closed at once and the client reconnects to what is queued.
func (s *session) UpgradeToSSEWhenReceiveNotification() {
	q := s.q.Load()
	if q == nil && !s.h.shared && s.holdIdle() {
		return
	}
	if q == nil {
		q = s.queues()
	}
	if sm := s.small.Load(); sm != nil && len(*sm) > 0 {
		s.rescueLate(q)
	}
	if len(q.notifications) < cap(q.notifications) {
		if s.h.shared {
			s.ensurePump(true)
		}
		s.h.met.queuedMessage()
		return
	}
	if s.h.shared {
		s.ensurePump(true)
	}
	squeezed := false
	if g := s.liveGet(); g != nil {
		squeezed = g.squeeze(s.h.stallThreshold())
	}
	if squeezed {
		s.h.met.squeezed()
	}
	s.h.refused(s.id, "session", cap(q.notifications), squeezed)
}

func (s *session) active() bool { return s.state.Load() == stateActive }

func (s *session) liveGet() *getStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get
}

// beginWork registers a running request, which termination cancels and
// waits for; it fails once the session terminates (goneAnswer), and, for a
// request of a session's own (not of the 2026-07-28 era, nor stateless),
// when the session already runs MaxRequestsPerSession (429).
func (s *session) beginWork(p *postStream) *failure {
	started, full := s.addWork(p)
	switch {
	case full:
		s.h.requestLimited.Add(1)
		return errTooManySessionRequests(s.h.cfg.MaxRequestsPerSession, requestLimitRetry)
	case !started:
		return s.h.goneAnswer() // not under s.mu: it takes h.mu
	}
	return nil
}

// addWork is beginWork under s.mu: started, or refused because the
// session is not active or (full) runs its maximum of requests.
func (s *session) addWork(p *postStream) (started, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active() {
		return false, false
	}
	if limit := s.h.cfg.MaxRequestsPerSession; limit > 0 && s.work-int(s.behind) >= limit && !s.modern && !s.stateless {
		return false, true
	}
	s.work++
	p.nextWork = s.running
	if s.running != nil {
		s.running.prevWork = p
	}
	s.running = p
	if s.h.shared {
		s.startWatchLocked()
	}
	return true, false
}

func (s *session) endWork(p *postStream) {
	s.mu.Lock()
	if p.prevWork != nil {
		p.prevWork.nextWork = p.nextWork
	} else {
		s.running = p.nextWork
	}
	if p.nextWork != nil {
		p.nextWork.prevWork = p.prevWork
	}
	p.prevWork, p.nextWork = nil, nil
	s.work--
	if s.work == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	s.mu.Unlock()
}

// addPostStream tracks a POST request's response writer, which
// termination squeezes and, at its deadline, closes. A writer tracked once
// that has begun gets it at once.
func (s *session) addPostStream(st *sseStream) {
	s.mu.Lock()
	if s.posts == nil {
		s.posts = make(map[*sseStream]struct{})
	}
	s.posts[st] = struct{}{}
	cancelled, interrupted := s.cancelled, s.interrupted
	s.mu.Unlock()
	switch {
	case interrupted:
		st.close(s.endedWith())
	case cancelled:
		st.squeeze(s.h.stallThreshold())
	}
}

// takeBounded counts one in on n, a count of the session's guarded by mu,
// unless n has reached limit; giveBounded counts one out. They keep the
// session's per-session bounds (resumed streams, requests let go of,
// records behind their writes).
func (s *session) takeBounded(n *int32, limit int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *n >= limit {
		return false
	}
	*n++
	return true
}

func (s *session) giveBounded(n *int32) {
	s.mu.Lock()
	*n--
	s.mu.Unlock()
}

// addResumer counts a resumed POST stream in, unless the session has
// maxResumedStreams open.
func (s *session) addResumer() bool { return s.takeBounded(&s.resumes, maxResumedStreams) }

func (s *session) removeResumer() { s.giveBounded(&s.resumes) }

func (s *session) removePostStream(st *sseStream) {
	s.mu.Lock()
	delete(s.posts, st)
	s.mu.Unlock()
}

var _ server.ClientSession = (*session)(nil)

// busy reports whether the session has an open GET stream or a running
// request, either of which counts as activity.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get != nil || s.work > 0
}

// queued counts the messages waiting for the GET stream.
func (s *session) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.queuedInQueues() + len(s.carry)
	if s.rep != nil {
		n += s.rep.pump.held
	}
	return n
}

// livesOn reports whether a session that ended here with cause lives on,
// on the other replicas: its record and its events are kept for them.
func (s *session) livesOn(cause error) bool {
	return s.h.shared && (cause == errClosed || cause == errShutdown)
}
