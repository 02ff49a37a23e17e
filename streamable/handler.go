// Package streamable is lifeline's MCP Streamable HTTP transport: an
// http.Handler that serves one MCP endpoint on top of mcp-go's
// *server.MCPServer and owns every session, stream and goroutine it starts.
//
// It serves protocol versions 2024-11-05 through 2025-11-25, and 2026-07-28
// (no sessions, decided per request), with its own code. Sessions are
// created by initialize and live until DELETE, idle expiry or Shutdown;
// each has at most one standalone GET stream, kept alive by JSON-RPC pings.
// Every write of a stream event or a response body has a deadline, and
// DELETE, expiry and Shutdown interrupt a blocked one, so no client can pin
// a handler.
package streamable

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/internal/bodydrain"
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Header names of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// Handler is the transport. Create it with New; it is safe for concurrent
// use. Shutdown (or Close) stops it and joins its goroutines.
type Handler struct {
	mcp      *server.MCPServer
	cfg      Config
	log      *slog.Logger
	sched    *heartbeat.Scheduler // nil when heartbeats are disabled
	versions []string             // the protocol versions served, newest first (served.all)
	served   servedVersions       // Config.ProtocolVersions resolved (versions.go)
	listens  listenSet            // open subscriptions/listen streams (listen.go)
	tapOnce  sync.Once
	tap      *broadcastTap // guarded by mu; set once (broadcast.go)
	// With a shared Broadcaster store (broadcast_cluster.go): whether the
	// listener is subscribed (broadcasts then go across replicas), the
	// context Shutdown cancels, the listener's and idle deliverer's exits
	// and the deliverer's queue.
	bcastShared  bool // set by New: the store is a shared Broadcaster
	clusterBcast atomic.Bool
	bcastCtx     context.Context
	bcastCancel  context.CancelFunc
	bcastDone    chan struct{}
	idleDone     chan struct{}
	idleJobs     chan idleDelivery
	holder       string // names this handler in stream leases
	shared       bool   // the store is shared with other replicas (cluster.go)
	callBase     int64  // first server-to-client request id of each session

	ephemeral ephemeralIDs // what ephemeral sessions' ids are made of (ephemeralID)
	epoch     time.Time    // when New made the handler: sessions' opened counts from it

	mu       sync.Mutex
	sessions map[string]*session
	// Of sessions, those serving a 2026-07-28 request (not counted in
	// MaxSessions), and of those the ones that are not listen streams
	// (at most MaxSessions in flight).
	modernSessions, modernRequests int
	adopting                       map[string]*adoption // with replicas: copies being made (adopt.go)
	callers                        map[string]int       // live sessions created here per caller digest (MaxSessionsPerCaller)
	shutting                       bool
	shuttingNow                    atomic.Bool // shutting, read without mu (isShutting)

	netHTTPWriter atomic.Value  // reflect.Type of net/http's HTTP/1 response writer, once seen (post_inline.go)
	answers       answerBuffers // JSON answers are encoded into these (answer_buffers.go)

	getStreams       atomic.Int64
	postStreams      atomic.Int64
	refusedCount     atomic.Int64
	droppedCount     atomic.Int64                // Stats.DroppedMessages
	callerMismatches atomic.Int64                // Stats.CallerMismatches
	callerLimited    atomic.Int64                // Stats.CallerSessionsRefused
	requestLimited   atomic.Int64                // Stats.SessionRequestsRefused
	unrecorded       atomic.Int64                // messages the event log refused (resume.go)
	postSignals      postSignals                 // resumable POST streams: running here, resumers following (post_signals.go)
	logLocal         bool                        // the event log is the process's MemoryEventLog: it never blocks, nor reads a store's context
	streamLog        sessionstore.EventStreamLog // the event log, when it records whole responses behind their writes (post_behind.go)
	openLinger       time.Duration               // how long a resumable response may linger before it opens: lingerFor the log (post_linger.go); set by tests
	checker          bool                        // the store is shared and a sessionstore.LivenessChecker (session_touch.go)
	waitingConns     map[net.Conn]*http.Server   // let-go connections waiting for a request to go back to their server (post_handback.go; mu)
	onShutdownOf     map[*http.Server]bool       // servers told to close waitingConns at their Shutdown (mu)
	writers          *writerPool                 // request writers' goroutines (writer_pool.go)
	watch            *requestWatch               // running requests' keep-alives and clients, in their first moments (request_watch.go)
	handBacks        sync.WaitGroup              // connections of let-go responses being given back to their server (post_inline.go); Add under mu, before shutting
	lingers          sync.WaitGroup              // ended GET streams' topics still read (cluster_linger.go); Add under mu, before shutting or while its drain goes on
	streamSeq        atomic.Int64
	tracing          tracing      // trace.go
	storeDown        atomic.Bool  // the store's last call failed (store_health.go)
	storeDownAt      atomic.Int64 // since when, in Unix nanoseconds

	stopSweep    chan struct{}
	drainEnd     chan struct{} // closed when a draining Shutdown's requests are done (cluster_drain.go)
	sweepDone    chan struct{}
	shutdownOnce sync.Once
	shutdownErr  error

	// Metrics (metrics.go): the instruments, and Config.Store metered,
	// which every store call goes through.
	met   *meters
	store meteredStore
}

// New returns a transport serving mcpServer with cfg (zero fields take their
// defaults). It starts the heartbeat scheduler and the expiry sweeper; call
// Shutdown or Close to stop them.
func New(mcpServer *server.MCPServer, cfg Config) *Handler {
	if mcpServer == nil {
		panic("streamable: New with a nil *server.MCPServer")
	}
	cfg = cfg.effective()
	served := newServedVersions(cfg.ProtocolVersions, cfg.Logger) // panics before anything starts
	h := &Handler{
		epoch:      time.Now(),
		served:     served,
		versions:   served.all,
		mcp:        mcpServer,
		cfg:        cfg,
		log:        cfg.Logger,
		holder:     rand.Text(),
		sessions:   make(map[string]*session),
		adopting:   make(map[string]*adoption),
		callers:    make(map[string]int),
		stopSweep:  make(chan struct{}),
		drainEnd:   make(chan struct{}),
		sweepDone:  make(chan struct{}),
		shared:     isShared(cfg.Store),
		logLocal:   isMemoryLog(cfg.EventLog),
		streamLog:  behindLog(cfg, isMemoryLog(cfg.EventLog)),
		openLinger: lingerFor(isMemoryLog(cfg.EventLog)),
		checker:    livenessChecker(cfg.Store),
		tracing:    newTracing(cfg),
		met:        newMeters(cfg.MeterProvider),
		writers:    newWriterPool(),
		watch:      newRequestWatch(cfg.HeartbeatInterval),
	}
	h.store = meteredStore{inner: cfg.Store, m: h.met}
	h.ephemeral.tag = ephemeralTag()
	if h.shared {
		h.callBase = callIDBase()
	}
	if cfg.HeartbeatInterval > 0 || h.shared {
		// With replicas the scheduler also renews stream leases, which
		// must lapse when a replica dies, heartbeats or not.
		h.sched = heartbeat.NewScheduler(cfg.Clock)
	}
	if b := h.clusterBroadcaster(); b != nil {
		h.bcastShared = true
		if d, ok := cfg.Store.(sessionstore.BroadcastDropCounter); ok {
			h.met.observeDrops(cfg.MeterProvider, d)
		}
		h.startBroadcastListener(b)
		h.ensureTap()
	}
	if cfg.IdleTTL > 0 || h.shared {
		go h.sweep()
	} else {
		close(h.sweepDone)
	}
	return h
}

// ServeHTTP implements http.Handler for the MCP endpoint.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.admitRequest(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r)
	case http.MethodGet, http.MethodDelete:
		if h.cfg.Stateless {
			h.refuse(w, r, errStatelessMethod())
			return
		}
		if r.Method == http.MethodGet {
			h.serveGet(w, r)
		} else {
			h.serveDelete(w, r)
		}
	default:
		h.refuse(w, r, errMethodNotAllowed(h.cfg.Stateless, h.cfg.DisableStreaming))
	}
}

// refuse answers f to a request whose body has not been read whole: if it
// may have one, the connection is closed (closing) after the answer and
// what the client still sends of the body is read and dropped for
// bodydrain.Linger at most, so that the close does not reset the
// connection under the answer.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, f *failure) {
	if r.ContentLength != 0 {
		f.closing()
	}
	h.writeFailure(w, f)
	if f.closeConn {
		bodydrain.DropUnread(w, r)
	}
}

// isShutting reports whether Shutdown has begun. It takes no lock: every
// request asks.
func (h *Handler) isShutting() bool {
	return h.shuttingNow.Load()
}

// addSession inserts s unless the handler is shutting down or full.
func (h *Handler) addSession(s *session) *failure {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutting {
		return errShuttingDown()
	}
	switch {
	case s.listen: // bounded by MaxListenStreams (listenSet.open)
	case s.modern:
		if h.modernRequests >= h.cfg.MaxSessions {
			return errTooManyModernRequests(h.cfg.MaxSessions, DefaultRetryAfter)
		}
		h.modernRequests++
	default:
		if len(h.sessions)-h.modernSessions >= h.cfg.MaxSessions {
			return errTooManySessions(h.cfg.MaxSessions, DefaultRetryAfter)
		}
		if s.counted {
			if f := h.callerFullLocked(s); f != nil {
				return f
			}
			h.callers[s.caller]++
		}
	}
	if s.modern {
		h.modernSessions++
	}
	h.sessions[s.id] = s
	if !s.stateless {
		s.opened = max(time.Since(h.epoch), 1)
		h.met.sessionOpened()
	}
	return nil
}

func (h *Handler) removeSession(id string) {
	h.mu.Lock()
	s, ok := h.sessions[id]
	if !ok {
		h.mu.Unlock()
		return
	}
	delete(h.sessions, id)
	if s.counted {
		if h.callers[s.caller]--; h.callers[s.caller] <= 0 {
			delete(h.callers, s.caller)
		}
	}
	if s.modern {
		h.modernSessions--
		if !s.listen {
			h.modernRequests--
		}
	}
	h.mu.Unlock()
}

func (h *Handler) snapshot() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		out = append(out, s)
	}
	return out
}

// session returns the live session named by the request's Mcp-Session-Id,
// or the failure to answer with: 400 without the header, 404 for an id that
// is unknown, expired or terminated (503 for one terminating because the
// server is shutting down). With touch, the request counts as activity.
func (h *Handler) session(r *http.Request, touch bool) (*session, *failure) {
	id := headerValue(r.Header, headerSessionID)
	if id == "" {
		return nil, errMissingSessionID()
	}
	s := h.lookup(id)
	if s == nil && h.shared {
		var f *failure
		if s, f = h.adopt(r, id); f != nil {
			return nil, f
		}
	}
	if s == nil {
		return nil, errSessionNotFound()
	}
	if !s.active() {
		return nil, h.goneAnswer()
	}
	// Before anything of the session is touched: a refused caller changes
	// nothing.
	if f := h.checkCaller(r, s); f != nil {
		return nil, f
	}
	var err error
	if touch {
		err = h.touch(r.Context(), s)
	} else {
		_, err = h.store.Get(r.Context(), id)
	}
	switch {
	case err == nil:
		h.storeAnswered()
		return s, nil
	case isGone(err):
		// Expired between sweeps (or, with replicas, ended on another
		// one): end it here now, the same way as the sweeper.
		s.terminate(context.Background(), h.goneCause(s, err))
		return nil, errSessionNotFound()
	default:
		h.storeFailed(r.Context(), "session lookup", err)
		return nil, errStore(err)
	}
}

// pings reports whether GET streams are pinged (heartbeats are on). With
// replicas the scheduler runs even when they are off, to renew leases.
func (h *Handler) pings() bool { return h.cfg.HeartbeatInterval > 0 }

// beatInterval is how often a GET stream's heartbeat fires: the heartbeat
// interval, or with heartbeats off (replicas only) the default one, for
// lease renewal alone.
func (h *Handler) beatInterval() time.Duration {
	if h.pings() {
		return h.cfg.HeartbeatInterval
	}
	return heartbeat.DefaultInterval
}

// stallThreshold is the write deadline of a stream whose queue overflowed.
func (h *Handler) stallThreshold() time.Duration {
	return min(h.cfg.WriteTimeout/4, time.Second)
}

// goneAnswer is the answer for a request whose session stopped being live
// while it was being served.
func (h *Handler) goneAnswer() *failure { return errSessionGone(h.isShutting()) }

func isGone(err error) bool {
	return errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, sessionstore.ErrTerminated)
}

// waitExits waits for every channel in exits to close, bounded by the
// cleanup timeout (in real time: it bounds network I/O). It reports whether
// all closed.
func (h *Handler) waitExits(id string, exits []<-chan struct{}) bool {
	if len(exits) == 0 {
		return true
	}
	t := time.NewTimer(h.cfg.CleanupTimeout)
	defer t.Stop()
	for _, ch := range exits {
		select {
		case <-ch:
		case <-t.C:
			h.log.Error("lifeline: session handlers did not exit within the cleanup timeout",
				"session", logID(id), "timeout", h.cfg.CleanupTimeout)
			return false
		}
	}
	return true
}

// goneCause names why s, a session the store no longer has (err, the
// store's answer), ended here.
func (h *Handler) goneCause(s *session, err error) error {
	switch {
	case !h.shared:
		return errExpired
	case s.closingHere.Load():
		return errClosed // CloseSessions ended its record
	case s.home && errors.Is(err, sessionstore.ErrNotFound):
		return errExpiredInStore
	}
	return errEndedElsewhere
}

// sweepEvery is how often the sweeper runs: a quarter of the idle TTL, at
// most 30 s (with replicas it also drops copies of sessions that ended on
// another replica, idle TTL or not).
func (h *Handler) sweepEvery() time.Duration {
	if h.cfg.IdleTTL <= 0 {
		return 30 * time.Second
	}
	return min(max(h.cfg.IdleTTL/4, time.Millisecond), 30*time.Second)
}

// sweep expires idle sessions. A session with an open GET stream or a
// running request is active, and is touched instead.
func (h *Handler) sweep() {
	defer close(h.sweepDone)
	every := h.sweepEvery()
	t := h.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-h.stopSweep:
			return
		case <-t.C():
		}
		h.sweepOnce()
		t.Reset(every)
	}
}

func (h *Handler) sweepOnce() {
	ctx := context.Background()
	for _, s := range h.snapshot() {
		select {
		case <-h.stopSweep:
			return
		default:
		}
		if !s.active() || s.stateless {
			// A stateless request's session has no record and ends with
			// its request.
			continue
		}
		var err error
		if s.busy() {
			err = h.store.Touch(ctx, s.id, h.cfg.IdleTTL)
		} else {
			_, err = h.store.Get(ctx, s.id)
		}
		switch {
		case isGone(err):
			h.log.Debug("lifeline: session expired or ended elsewhere", "session", logID(s.id), "idle_ttl", h.cfg.IdleTTL)
			s.terminate(context.Background(), h.goneCause(s, err))
		case err != nil:
			h.storeFailed(ctx, "sweep", err)
			h.log.Debug("lifeline: store check failed", "session", logID(s.id), "err", err)
		default:
			h.storeAnswered()
		}
	}
	// The default store frees what lapsed as it goes; this frees the rest.
	if m, ok := h.cfg.Store.(interface{ Sweep() }); ok {
		m.Sweep()
	}
}
