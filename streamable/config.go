package streamable

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Defaults applied by New to zero fields of Config.
const (
	DefaultWriteTimeout   = 10 * time.Second
	DefaultCleanupTimeout = 5 * time.Second
	DefaultIdleTTL        = 30 * time.Minute
	DefaultMaxSessions    = 10000
	// DefaultMaxListenStreams is Config.MaxListenStreams's default.
	DefaultMaxListenStreams = 10000
	DefaultMaxBodyBytes     = 4 << 20
	// DefaultBodyReadTimeout is Config.BodyReadTimeout's default.
	DefaultBodyReadTimeout = 30 * time.Second
	DefaultQueueSize       = 512
	// DefaultRequestQueueSize is Config.RequestQueueSize's default.
	DefaultRequestQueueSize = 32
	DefaultRetryAfter       = 5 * time.Second
	// DefaultMaxSessionsPerCaller is Config.MaxSessionsPerCaller's default.
	DefaultMaxSessionsPerCaller = 100
	// DefaultMaxRequestsPerSession is Config.MaxRequestsPerSession's default.
	DefaultMaxRequestsPerSession = 64
)

// requestLimitRetry is the Retry-After of a request refused because its
// session has MaxRequestsPerSession running: one of them is likely to be
// answered within it.
const requestLimitRetry = time.Second

// defaultEventTTL is the default memory event log's expiry of a session's
// events after its last one: a backstop, as the transport purges a
// session's events when it ends.
const defaultEventTTL = 24 * time.Hour

// Disabled, given as HeartbeatInterval or IdleTTL, turns the feature off.
// (A zero value means "use the default".)
const Disabled time.Duration = -1

// Config configures a Handler. Every zero field takes the documented default,
// so Config{} is a production-ready configuration.
type Config struct {
	// HeartbeatInterval is how often each standalone GET stream gets a
	// JSON-RPC ping, and how long a POST response may stay silent before it
	// gets a ": keepalive" comment. Default heartbeat.DefaultInterval (20 s);
	// Disabled turns both off. With a shared Store, a GET stream's lease
	// lasts MissedPongLimit+1 intervals, at least 1 s and at most 3 s (3 s
	// at the defaults; the default interval's when heartbeats are
	// Disabled), and is renewed every third of that on a timer of its own,
	// whatever the stream is writing: a replica that dies frees its
	// clients' streams for a GET on another replica within that time.
	HeartbeatInterval time.Duration
	// MissedPongLimit is how many consecutive pings a client that has
	// answered before may leave unanswered before its GET stream is closed
	// as dead. Default heartbeat.DefaultMissedPongLimit (2).
	MissedPongLimit int
	// WriteTimeout bounds every write to a stream; a client that stops
	// reading loses its stream after it. Default 10 s.
	WriteTimeout time.Duration
	// CleanupTimeout bounds how long DELETE, expiry and a conflicting GET
	// wait for a stream's handler to exit. Default 5 s.
	CleanupTimeout time.Duration
	// IdleTTL is how long a session lives without a request or an open GET
	// stream. Default 30 min; Disabled keeps sessions until DELETE. With a
	// shared store that checks liveness apart from Touch
	// (sessionstore.LivenessChecker: redisstore), a replica extends a
	// session's expiry at most once per IdleTTL/16 and only checks it for
	// the requests in between, so the session may expire up to IdleTTL/16
	// before IdleTTL after its last request.
	IdleTTL time.Duration
	// MaxSessions caps live sessions (in-flight stateless requests
	// included); initialize beyond it gets 503 with Retry-After. It also
	// caps, separately, the 2026-07-28 requests in flight (listen streams
	// apart: MaxListenStreams). Default 10,000.
	MaxSessions int
	// Identify names the caller of a request; "" means anonymous. An error
	// is answered 401, its text sent to the client ("Unauthorized: the
	// caller could not be identified: " and the text), so word it for the
	// client. When nil, the caller is CallerIdentity of the request's
	// context: what an authentication middleware set with
	// WithCallerIdentity, else the UserID of the token
	// auth.RequireBearerToken verified, else anonymous.
	//
	// A session is bound to the caller of its initialize: the record in
	// the Store keeps the identity's SHA-256 (never the identity), so every
	// replica sharing the Store enforces it. Any later POST (requests,
	// notifications, responses to the server's requests), GET or DELETE
	// on a bound session from another caller, or an anonymous one, gets
	// 403 with a JSON-RPC error saying so (echoing the request's id) and
	// changes nothing: the session is not touched (its idle timer not
	// reset), its stream and queued messages stay as they are. Each
	// refusal is logged at Warn (the session and both identities named
	// by the first 12 hex digits of their SHA-256) and counted
	// (Stats.CallerMismatches). A session whose initialize was anonymous
	// is bound to no one: any caller may use it, as without Identify.
	// Identify runs at initialize and on each request for a bound
	// session; stateless mode and protocol version 2026-07-28 have no
	// sessions, so it never runs for them (their requests carry their
	// authorization each time).
	Identify func(r *http.Request) (string, error)
	// MaxSessionsPerCaller caps the live sessions one identified caller
	// (Identify) holds on this replica; its next initialize gets 429 with
	// Retry-After (DefaultRetryAfter) until one of them ends (DELETE or
	// idle expiry). A refusal, not the eviction of the caller's oldest
	// idle session: eviction would end a session a client of that caller
	// still holds (another tab, another agent) without telling it, and a
	// looping client would keep evicting its owner's good sessions; a 429
	// keeps every existing session working and tells the looping client
	// what is wrong. Anonymous callers have no per-caller bound (only
	// MaxSessions): behind a proxy every client has the proxy's address,
	// so a per-address bound would cap the whole server; a server on the
	// open internet identifies its callers. With replicas, each replica
	// counts the sessions created on it, so a caller can hold up to this
	// many per replica. Default 100; a negative value turns it off.
	MaxSessionsPerCaller int
	// MaxRequestsPerSession caps the requests one session has running at
	// once on this replica (each request of a batch counts); one more gets
	// 429 with Retry-After (1 s) and a JSON-RPC error echoing its id.
	// Notifications and responses are not requests and are never refused
	// by it. Default 64; a negative value turns it off.
	MaxRequestsPerSession int
	// MaxBodyBytes caps a POST body; larger bodies get 413. Default 4 MiB.
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a POST body may take to arrive,
	// counted from when the transport starts reading it (the headers are
	// the HTTP server's to bound: ReadHeaderTimeout). A client slower than
	// that gets 408 and its connection is closed, so that no client can
	// hold a handler by trickling a body; Shutdown interrupts bodies still
	// arriving (503). It needs no http.Server setting: a body still
	// arriving when it passes (noticed within a tick of the transport's
	// request watch, 20 ms) has its read interrupted through
	// http.ResponseController (a writer without deadline support, a
	// middleware's wrapper that does not unwrap, reads without the bound,
	// and its body is served once it has arrived). An http.Server's
	// ReadTimeout, counted from the request's start, bounds the body too;
	// the earlier of the two ends it. It never touches GET streams.
	// Default 30 s; Disabled turns it off.
	BodyReadTimeout time.Duration
	// QueueSize bounds each stream's outbound queues: notifications, and
	// server-to-client requests. A notification that finds its queue full
	// is refused (the sender gets mcp-go's ErrNotificationChannelBlocked),
	// the refusal is counted in Stats and logged (rate-limited), and the
	// stream's write deadline is cut to at
	// most 1 s for the rest of its life, so a stream whose client stopped
	// reading is closed (its client reconnects to what is queued); a server
	// request that finds its queue full fails with an error. A session
	// that has no stream holds what it is sent in memory that grows with
	// it, within the same bound, until a stream takes it. Default 512.
	QueueSize int
	// RequestQueueSize bounds the queues of one request's own stream (a
	// POST answered with SSE: progress and logging during a tool call, and
	// server requests made during it). They are made when the request first
	// sends something. A tool that sends faster than the stream's writer
	// takes from a full queue waits for room, at most 1 s (a quarter of
	// WriteTimeout if that is shorter); after that the notification is
	// refused and the stream squeezed, as with QueueSize. (Senders on
	// several goroutines of one call can still race for the last free
	// slot: the loser's send is refused.) A server request that finds the
	// queue full fails at once. Default 32.
	RequestQueueSize int
	// Logger receives transport events. Default slog.Default().
	Logger *slog.Logger
	// Clock is the time source of heartbeats, idle expiry and the default
	// memory store; tests inject a manual one. Bounds on waiting for network
	// I/O (write deadlines, CleanupTimeout) always use real time. Default
	// the system clock.
	Clock heartbeat.Clock
	// Store keeps session records and stream ownership. Default a new
	// sessionstore.Memory, for one process. Any other store (such as
	// sessionstore/redisstore) is taken to be shared by several replicas,
	// each with its own Handler: then any replica serves any request of any
	// session (it adopts sessions created elsewhere from their records),
	// messages for a GET stream held by another replica travel over the
	// store's bus, a second GET anywhere gets 409, DELETE anywhere ends the
	// session everywhere, and Shutdown leaves the sessions to the other
	// replicas. Store errors are answered 503. The store is the caller's to
	// close, after Shutdown.
	Store sessionstore.Store
	// DisableLocalhostProtection turns off DNS-rebinding protection: by
	// default a request that reached a loopback listener with a Host that
	// is not localhost or a loopback address gets 403. Turn it off only
	// behind a local proxy that forwards the public Host.
	DisableLocalhostProtection bool
	// AllowedOrigins lists the browser origins (e.g. "https://app.example")
	// allowed besides, on a loopback listener, local ones; a request with
	// any other Origin gets 403, a page served from the server's own public
	// host included (list it). "*" allows every origin. Listed origins also
	// get CORS headers (preflights answered).
	AllowedOrigins []string
	// CORSAllowCredentials adds Access-Control-Allow-Credentials to CORS
	// answers.
	CORSAllowCredentials bool
	// ContextFunc, when set, derives the context of every message the
	// MCPServer handles (initialize, requests, notifications) and of the
	// unregister hooks a DELETE runs, from the HTTP request: to carry
	// authentication, say. The request's headers are always reachable with
	// RequestHeader. The context it is given is the HTTP request's, which
	// ends when the client leaves; a resumable request's, which can outlive
	// its HTTP request, is given it without its cancellation.
	ContextFunc func(ctx context.Context, r *http.Request) context.Context
	// Stateless serves every POST on an ephemeral session of its own, ended
	// with the request: no session ids, GET and DELETE get 405, server-to-
	// client requests fail, and no client's messages ever reach another.
	// In-flight stateless requests count toward MaxSessions.
	Stateless bool
	// MaxListenStreams caps the open 2026-07-28 subscriptions/listen
	// streams; one more gets 503 with Retry-After. They do not count
	// toward MaxSessions; other 2026-07-28 requests in flight are capped
	// at MaxSessions apart from sessions. Default 10,000.
	MaxListenStreams int
	// DisableStreaming answers GET with 405: no standalone stream, so
	// session notifications wait in the queue (and are refused when it is
	// full); request-scoped messages still stream on POST responses.
	DisableStreaming bool
	// EventLog records what each session's standalone GET stream sends,
	// so that a client whose stream broke can resume it: every message
	// written there carries an SSE id from the log, and a GET with
	// Last-Event-ID is first sent, in order and once each, what the stream
	// sent after that id, then goes on live (an id the log does not hold
	// for the session, evicted or expired say, opens a fresh stream, and
	// that is logged: a client would take an error for its session's
	// end). mcp-go's server.EventStore satisfies it. A session's events
	// last as long as it does.
	// When nil, and the Store is the process-local default, a bounded
	// sessionstore.MemoryEventLog is used (its documented bounds: 1,000
	// events and 4 MiB per stream, 256 MiB for the process). With a shared
	// Store that implements sessionstore.EventLogProvider (as
	// redisstore.Store does), nil means the Store's own log, with the
	// default bounds (sessionstore.EventLogOptions) and a session's events
	// kept IdleTTL after the session's last one
	// (sessionstore.DefaultEventTTL when IdleTTL is Disabled): every
	// replica sharing the Store can then replay what another sent, so a
	// client resumes on any replica. (A client that resumes from an event
	// older than that, its session's last, gets a fresh stream.)
	// With any other shared Store, nil leaves resumability off (a memory
	// log cannot serve a resume on another replica). A session's events
	// are purged when it ends here (DELETE, or expiry noticed by this
	// process); with a shared Store, a session that expired there keeps
	// its events until their own expiry. Pings are never recorded.
	// Every message a stream carries is recorded before it is written,
	// except as below. A resumable POST response's first notifications (a session-era
	// request's, not a batch's or a listen stream's) wait up to 5 ms with
	// a log in another process (anything but a
	// sessionstore.MemoryEventLog), 1 ms with the memory log, before they
	// are recorded and written: a request that answers meanwhile has them
	// and its answer recorded in one call (one round trip instead of two,
	// with Redis) and written in one write. A request to the client is
	// never held back. With a log in another process that implements
	// sessionstore.EventStreamLog (the Redis log), such a response is
	// written first and recorded after, its events under ids of their
	// places in the stream, so the client does not wait for the round
	// trip; the request counts as running for termination and Shutdown
	// (not for MaxRequestsPerSession: it has answered) until the record
	// lands, a session has at most 16 such records pending (past that a
	// response is recorded before it is written), and a resume from an id
	// whose stream the log holds nothing of waits, up to WriteTimeout, for
	// a record that may still land.
	EventLog sessionstore.EventLog
	// DisableEventLog turns resumability off, whatever EventLog is: GET
	// streams carry no ids and Last-Event-ID is ignored (a fresh stream).
	DisableEventLog bool
	// NewSessionID generates session ids; they must be unique, unguessable
	// and visible ASCII (0x21-0x7E). Default a UUIDv4 from crypto/rand.
	NewSessionID func() string

	// Tracing (trace.go). Both default to OpenTelemetry's globals, so
	// nothing is traced, and the request path does no tracing work at
	// all, until the application installs a provider.

	// TracerProvider makes the SERVER span of every MCP request (named,
	// and with attributes, as OpenTelemetry's MCP semantic conventions
	// say) and the short lifeline.stream spans of GET stream events.
	// Default otel.GetTracerProvider(), read on every request, so a
	// provider installed after New is used.
	TracerProvider trace.TracerProvider
	// Propagator reads a request's parent trace context: from the
	// message's params._meta (traceparent, tracestate) when it carries
	// one, else from the HTTP headers (unless the request's context
	// already holds a span, which stays the parent). Default
	// otel.GetTextMapPropagator(), read on every traced request. _meta's
	// trace context, W3C by the MCP conventions, is read as W3C when the
	// propagator does not read it (the global one is a no-op until the
	// application sets one).
	Propagator propagation.TextMapPropagator
	// MeterProvider receives the transport's OpenTelemetry metrics: the
	// MCP semantic conventions' mcp.server.operation.duration and
	// mcp.server.session.duration, and lifeline's own lifeline.* (sessions,
	// streams, heartbeats, HTTP answers by status and cause, writes,
	// queues, store calls, bus, event log). No attribute carries a session
	// id, a request id or any other value a client can vary without bound.
	// Default otel.GetMeterProvider(): nothing is recorded until the
	// application installs an SDK provider, and recording costs the
	// request path no allocation. The four counts most requests make
	// (lifeline.http.responses, lifeline.messages.queued,
	// lifeline.events.recorded, lifeline.store.calls) are asynchronous:
	// kept as atomics from New and read when the provider collects, so
	// they cost a request one atomic add with an SDK installed too.
	MeterProvider metric.MeterProvider

	// Stock options (issue 14): the versions served and per-request
	// session ids.

	// ProtocolVersions lists the protocol versions served (mcp-go's
	// WithStreamableHTTPProtocolVersions); empty serves every version
	// mcp-go implements (mcp.ValidProtocolVersions). server/discover
	// advertises the list, and a 2026-07-28 request naming a version not
	// in it gets 400 (-32022, the versions served in its data), as in
	// mcp-go. Unlike mcp-go, which restricts only those, lifeline applies
	// the list to sessions too: an MCP-Protocol-Version header naming a
	// session-era version not in it gets 400, and initialize asking for
	// one not in it (or an unknown one) is answered with the newest
	// session-era version listed; with none listed (2026-07-28 alone),
	// initialize gets 400. Versions mcp-go does not implement are ignored
	// and logged; a list of only such versions makes New panic.
	ProtocolVersions []string
	// NewSessionIDFor, when set, generates the id of the session that the
	// initialize request r creates, in place of NewSessionID (mcp-go's
	// WithSessionIdManagerResolver: only Generate of the manager it
	// resolves is used). The same rules apply to its ids; an empty one
	// fails that initialize with 500.
	NewSessionIDFor func(r *http.Request) string
}

// effective returns c with every default applied.
func (c Config) effective() Config {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = heartbeat.DefaultInterval
	}
	if c.HeartbeatInterval < 0 {
		c.HeartbeatInterval = 0
	}
	if c.MissedPongLimit <= 0 {
		c.MissedPongLimit = heartbeat.DefaultMissedPongLimit
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.CleanupTimeout <= 0 {
		c.CleanupTimeout = DefaultCleanupTimeout
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = DefaultIdleTTL
	}
	if c.IdleTTL < 0 {
		c.IdleTTL = 0
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxSessionsPerCaller == 0 {
		c.MaxSessionsPerCaller = DefaultMaxSessionsPerCaller
	}
	if c.MaxRequestsPerSession == 0 {
		c.MaxRequestsPerSession = DefaultMaxRequestsPerSession
	}
	if c.MaxListenStreams <= 0 {
		c.MaxListenStreams = DefaultMaxListenStreams
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.BodyReadTimeout < 0 {
		c.BodyReadTimeout = 0
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.RequestQueueSize <= 0 {
		c.RequestQueueSize = DefaultRequestQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = heartbeat.SystemClock{}
	}
	if c.Store == nil {
		c.Store = sessionstore.NewMemory(c.Clock.Now)
	}
	if c.NewSessionID == nil {
		c.NewSessionID = newUUID
	}
	switch {
	case c.DisableEventLog:
		c.EventLog = nil
	case c.EventLog == nil && !isShared(c.Store):
		// Events live as long as their session (the transport purges them
		// when it ends); the log's own expiry only backs a missed purge up,
		// so that a quiet stream's events do not lapse while it is open.
		c.EventLog = sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{Now: c.Clock.Now,
			EventLogOptions: sessionstore.EventLogOptions{TTL: defaultEventTTL}})
	case c.EventLog == nil:
		if p, ok := c.Store.(sessionstore.EventLogProvider); ok {
			// Events outlive their session's last activity by at most the
			// idle TTL: a session that expires in a shared store is purged
			// by nobody.
			ttl := c.IdleTTL
			if ttl <= 0 {
				ttl = sessionstore.DefaultEventTTL
			}
			c.EventLog = p.NewEventLog(sessionstore.EventLogOptions{TTL: ttl})
		}
	}
	return c
}

// newUUID returns a random UUIDv4 read from crypto/rand.
func newUUID() string {
	return uuid.Must(uuid.NewRandomFromReader(rand.Reader)).String()
}
