package streamable

import (
	"context"
	"errors"
	"fmt"
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
	letGo   int32                   // running requests whose response was let go of (post_resume.go)
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

// maxWriteAttempts bounds how many GET streams try to write one message. A
// message whose write failed on that many streams (a client that never
// takes it whole: it stalls, trickles below minWriteRate, or drops its
// connection each time) is dropped, logged at Warn and counted in
// Stats.DroppedMessages, so that it cannot hold back what is queued
// behind it, nor be resent to the client forever.
const maxWriteAttempts = 3

// carried is a message a GET stream took for its client and did not
// write, kept for the session's next stream, with how many streams tried
// to write it.
type carried struct {
	msg      []byte
	attempts int
	id       string // its event id, when the event log recorded it (resume.go)
}

// requeue keeps a message that a stream took but never tried to write, so
// that the next stream writes it first.
func (s *session) requeue(msg []byte) { s.keep(carried{msg: msg}) }

// keep puts c at the end of the carry-over. It was not written: its caller
// (a server-to-client request's) may still withdraw it.
func (s *session) keep(c carried) {
	if !s.calls.keepAfterFailure(c.msg) {
		return // a request whose caller gave up while it was being written
	}
	s.mu.Lock()
	s.carry = append(s.carry, c)
	s.mu.Unlock()
	s.h.met.carriedMessage()
}

// writeFailed keeps c, whose write on a stream failed with err, for the
// next stream, or drops it once maxWriteAttempts streams have tried it. A
// write the stream refused without trying (it had already ended: err does
// not wrap errWriteFailed) is no attempt.
func (s *session) writeFailed(c carried, err error) {
	if errors.Is(err, errWriteFailed) {
		c.attempts++
	}
	if c.attempts < maxWriteAttempts {
		s.keep(c)
		return
	}
	dropped := fmt.Errorf("lifeline: the request could not be delivered: %d streams failed to write it: %w", c.attempts, err)
	if !s.calls.undeliverable(c.msg, dropped) && s.h.shared {
		s.failRemoteCall(c.msg, dropped) // forwarded here by the replica that issued it
	}
	n := s.h.droppedCount.Add(1)
	s.h.log.Warn("lifeline: dropping a message that no stream could deliver",
		"session", logID(s.id), "bytes", len(c.msg), "attempts", c.attempts, "err", err, "dropped_total", n)
}

func (s *session) takeCarry() []carried {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.carry
	s.carry = nil
	return c
}

// beginTerminate moves an active session to terminating: no request or
// stream starts any more, pending server-to-client requests fail and the
// GET stream is closed (a blocked write interrupted). Unless graceful, the
// running requests are cancelled too (cancelRunning); Shutdown, graceful,
// lets them run for a while first. It reports whether this call started
// the termination, and returns the channels that close once the session's
// GET handler and POST workers have exited. Callers hold s.life.
func (s *session) beginTerminate(cause error, graceful bool) (started bool, exits []<-chan struct{}) {
	if !s.state.CompareAndSwap(stateActive, stateTerminating) {
		return false, nil
	}
	s.endContext(cause)
	if !s.stateless { // a stateless session's calls fail at once anyway
		s.calls.failAll(fmt.Errorf("lifeline: %w", cause))
	}
	s.mu.Lock()
	g := s.get
	if s.work > 0 {
		s.idle = make(chan struct{})
		exits = append(exits, s.idle)
	}
	if r := s.rep; r != nil {
		if r.pump.done != nil && !(graceful && s.h.drainsToReplicas()) {
			exits = append(exits, r.pump.done) // a drain's pumps end with it (cluster_drain.go)
		}
		if r.watch.done != nil {
			exits = append(exits, r.watch.done)
		}
	}
	s.mu.Unlock()

	if !graceful {
		s.cancelRunning(cause)
	}
	if g != nil {
		g.close(cause)
		exits = append(exits, g.exited())
	}
	return true, exits
}

// cancelRunning cancels every running request of a terminating session with
// cause, and squeezes their response writers to the stall threshold: an
// answer that exists (the tool returned, or returns on cancellation) is
// still written to a client that reads it, with its id, while one that
// stopped reading loses its response within the threshold.
func (s *session) cancelRunning(cause error) {
	s.mu.Lock()
	s.cancelled = true
	var running []*postStream
	for p := s.running; p != nil; p = p.nextWork {
		running = append(running, p)
	}
	posts := s.postsLocked()
	s.mu.Unlock()
	for _, p := range running {
		p.cancel(cause)
	}
	for _, st := range posts {
		st.squeeze(s.h.stallThreshold())
	}
}

// interruptPosts closes the response writers of a terminating session's
// requests, interrupting blocked writes: the termination's wait is over.
func (s *session) interruptPosts(cause error) {
	s.mu.Lock()
	s.interrupted = true
	posts := s.postsLocked()
	s.mu.Unlock()
	for _, st := range posts {
		st.close(cause)
	}
}

func (s *session) postsLocked() []*sseStream {
	posts := make([]*sseStream, 0, len(s.posts))
	for st := range s.posts {
		posts = append(posts, st)
	}
	return posts
}

// finishTerminate unregisters a terminating session everywhere it should
// end: in this process always, and in the store unless the session lives
// on for other replicas (this one is shutting down) or already ended there.
// Callers hold s.life.
func (s *session) finishTerminate(ctx context.Context, cause error) {
	if !s.state.CompareAndSwap(stateTerminating, stateTerminated) {
		return
	}
	defer s.closeEnded()
	if !s.stateless {
		s.h.log.Debug("lifeline: session ended", "session", logID(s.id), "cause", cause.Error())
	}
	s.h.removeSession(s.id)
	if s.opened != 0 {
		opened := s.h.epoch.Add(s.opened)
		if s.h.shared && cause == errShutdown {
			opened = time.Time{} // it lives on, on the other replicas
		}
		s.h.met.sessionEnded(cause, s.ProtocolVersion(), opened)
	}
	s.h.mcp.UnregisterSession(ctx, s.id)
	if s.stateless || cause == errEndedElsewhere || cause == errExpiredInStore || cause == errDeletedInStore || s.livesOn(cause) || cause == errDiscarded {
		return // never stored, already ended there, removed by the caller, or kept for the other replicas
	}
	if log := s.h.cfg.EventLog; log != nil {
		if err := log.PurgeSession(ctx, s.id); err != nil {
			s.h.log.Warn("lifeline: purge the session's events", "session", logID(s.id), "err", err)
		}
	}
	if err := s.h.store.Terminate(ctx, s.id); err != nil && !isGone(err) {
		s.h.log.Warn("lifeline: store terminate failed", "session", logID(s.id), "err", err)
	}
}

// terminate runs the whole termination path (ctx reaches mcp-go's
// unregister hooks) and waits, bounded by the
// cleanup timeout, for the session's handlers to exit. It reports whether
// this call terminated the session; a call that lost the race to another
// termination waits (bounded) for that one to finish. The lifecycle lock is
// held only to change state: once terminating, no GET can start, so the
// wait itself does not need it.
func (s *session) terminate(ctx context.Context, cause error) bool {
	s.life.Lock()
	started, exits := s.beginTerminate(cause, false)
	s.life.Unlock()
	if !started {
		if s.stateless {
			// Its one request is done (this runs as it returns):
			// whoever is terminating it (Shutdown) needs nothing more,
			// and its answer must not wait for them.
			return false
		}
		t := time.NewTimer(s.h.cfg.CleanupTimeout)
		defer t.Stop()
		select {
		case <-s.endedChan():
		case <-t.C:
		}
		return false
	}
	if !s.h.waitExits(s.id, exits) {
		s.interruptPosts(cause)
	}
	s.life.Lock()
	s.finishTerminate(ctx, cause)
	s.life.Unlock()
	return true
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
