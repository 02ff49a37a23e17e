// Package server is what a hosted MCP server starts: lifeline's transport
// with its HTTP server, a drop-in for mcp-go's StreamableHTTPServer. Swapping
// is one line:
//
//	httpServer := server.NewStreamableHTTPServer(mcpServer)   // mcp-go
//	httpServer := lifeline.NewStreamableHTTPServer(mcpServer) // lifeline
//
// with lifeline imported as "github.com/lifeline-mcp/lifeline/server".
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// DefaultEndpointPath is where Start serves the MCP endpoint.
const DefaultEndpointPath = "/mcp"

// Option configures a Server.
type Option func(*Server)

// WithEndpointPath sets the path Start serves the endpoint on (default
// "/mcp"). Like mcp-go's option of the same name, it has no effect when the
// Server is used as an http.Handler.
func WithEndpointPath(path string) Option {
	return func(s *Server) { s.endpointPath = "/" + strings.Trim(path, "/") }
}

// WithHeartbeatInterval sets the ping interval on GET streams (default 20 s
// without this option). As with mcp-go's option, zero or a negative value
// turns heartbeats off.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(s *Server) { s.cfg.HeartbeatInterval = positiveOrDisabled(d) }
}

// WithSessionIdleTTL sets how long an idle session lives (default 30 min
// without this option). As with mcp-go's option, zero or a negative value
// keeps sessions until DELETE.
func WithSessionIdleTTL(d time.Duration) Option {
	return func(s *Server) { s.cfg.IdleTTL = positiveOrDisabled(d) }
}

func positiveOrDisabled(d time.Duration) time.Duration {
	if d <= 0 {
		return streamable.Disabled
	}
	return d
}

// WithWriteTimeout bounds every write to a stream (default 10 s).
func WithWriteTimeout(d time.Duration) Option {
	return func(s *Server) { s.cfg.WriteTimeout = d }
}

// WithStreamableHTTPLogger sets the transport's logger (default slog.Default()).
func WithStreamableHTTPLogger(l *slog.Logger) Option {
	return func(s *Server) { s.cfg.Logger = l }
}

// WithStreamableHTTPServer makes Start and Shutdown use srv. Its Handler,
// when set, must route the endpoint to this Server itself; when nil, Start
// sets it to a mux serving the endpoint path.
func WithStreamableHTTPServer(srv *http.Server) Option {
	return func(s *Server) { s.httpServer = srv }
}

// WithDisableLocalhostProtection turns off DNS-rebinding protection, as
// mcp-go's option of the same name does (see
// streamable.Config.DisableLocalhostProtection).
func WithDisableLocalhostProtection(disable bool) Option {
	return func(s *Server) { s.cfg.DisableLocalhostProtection = disable }
}

// WithAllowedOrigins sets the browser origins allowed besides the server's
// own and local ones; they also get CORS headers ("*" allows any). See
// streamable.Config.AllowedOrigins.
func WithAllowedOrigins(origins ...string) Option {
	return func(s *Server) { s.cfg.AllowedOrigins = append(s.cfg.AllowedOrigins, origins...) }
}

// WithHTTPContextFunc sets a function that derives, from the HTTP request,
// the context of every message the MCPServer handles and of the unregister
// hooks a DELETE runs (mcp-go's own transport applies it to POST only).
func WithHTTPContextFunc(fn mcpserver.HTTPContextFunc) Option {
	return func(s *Server) { s.cfg.ContextFunc = fn }
}

// WithStateLess serves every request on an ephemeral session of its own
// (see streamable.Config.Stateless), as mcp-go's option of the same name
// does, except that no client's messages ever reach another.
func WithStateLess(stateless bool) Option {
	return func(s *Server) { s.cfg.Stateless = stateless }
}

// WithDisableStreaming answers GET with 405 (no standalone stream), as
// mcp-go's option of the same name does.
func WithDisableStreaming(disable bool) Option {
	return func(s *Server) { s.cfg.DisableStreaming = disable }
}

// WithStreamableHTTPCORS configures CORS with mcp-go's CORS options. The
// allowed origins (which Origin validation also admits) and credentials are
// honoured; lifeline answers preflights with the methods and headers MCP
// needs, so the method, header and max-age options are not consulted.
func WithStreamableHTTPCORS(opts ...mcpserver.CORSOption) Option {
	return func(s *Server) {
		var c mcpserver.CORSConfig
		for _, o := range opts {
			if o != nil {
				o(&c)
			}
		}
		s.cfg.AllowedOrigins = append(s.cfg.AllowedOrigins, c.AllowedOrigins...)
		s.cfg.CORSAllowCredentials = s.cfg.CORSAllowCredentials || c.AllowCredentials
	}
}

// WithSessionIdManager takes session ids from manager.Generate. lifeline
// keeps session validity itself (404 for unknown, expired or terminated
// ids), so the manager's Validate and Terminate are not consulted.
func WithSessionIdManager(manager mcpserver.SessionIdManager) Option {
	return func(s *Server) {
		if manager != nil {
			s.cfg.NewSessionID = manager.Generate
			s.cfg.NewSessionIDFor = nil // the last of it and WithSessionIdManagerResolver wins
		}
	}
}

// WithTLSCert makes Start serve HTTPS with the given certificate and key
// files.
func WithTLSCert(certFile, keyFile string) Option {
	return func(s *Server) { s.tlsCert, s.tlsKey = certFile, keyFile }
}

// WithSessionStore makes the transport keep its session records, stream
// leases and per-session bus in store instead of a new in-memory store of
// its own (see streamable.Config.Store); a store shared by several replicas,
// such as a redisstore.Store on one Redis and prefix, lets any of them serve
// a session. The Server never closes store: it stays the caller's to
// close, after Shutdown has returned, since the transport uses it until
// then.
func WithSessionStore(store sessionstore.Store) Option {
	return func(s *Server) { s.cfg.Store = store }
}

// WithEventStore records what each session's GET stream sends in store, so
// that a client whose stream broke resumes it with Last-Event-ID (see
// streamable.Config.EventLog), as mcp-go's option of the same name does;
// any mcp-go EventStore, such as its NewInMemoryEventStore, serves. Unlike
// mcp-go, lifeline resumes without this option too, from a bounded memory
// log of its own, or with a shared session store from the store's own log
// (sessionstore.EventLogProvider: redisstore.Store keeps one on Redis, so
// a stream resumes on any replica); with another shared store, only with
// this option. WithEventStore(nil) turns resumability off, as mcp-go has
// it without a store.
func WithEventStore(store mcpserver.EventStore) Option {
	return func(s *Server) {
		s.cfg.EventLog = store
		s.cfg.DisableEventLog = store == nil
	}
}

// WithCallerIdentity binds each session to the caller identify names
// (see streamable.Config.Identify): any other caller's request on it gets
// 403. Without this option the caller is what an authentication middleware
// put in the request's context with streamable.WithCallerIdentity, else the
// user of the token auth.RequireBearerToken verified, if anything. mcp-go has no equivalent; the Go SDK binds sessions to the
// authenticated user the same way.
func WithCallerIdentity(identify func(r *http.Request) (string, error)) Option {
	return func(s *Server) { s.cfg.Identify = identify }
}

// WithMaxSessions caps the live sessions (streamable.Config.MaxSessions;
// default streamable.DefaultMaxSessions): initialize past it gets 503.
func WithMaxSessions(n int) Option {
	return func(s *Server) { s.cfg.MaxSessions = n }
}

// WithMaxSessionsPerCaller caps the live sessions one identified caller
// holds (streamable.Config.MaxSessionsPerCaller; default
// streamable.DefaultMaxSessionsPerCaller): its initialize past it gets
// 429. A negative n turns the bound off.
func WithMaxSessionsPerCaller(n int) Option {
	return func(s *Server) { s.cfg.MaxSessionsPerCaller = n }
}

// WithMaxRequestsPerSession caps the requests one session runs at once
// (streamable.Config.MaxRequestsPerSession; default
// streamable.DefaultMaxRequestsPerSession): one more gets 429. A negative
// n turns the bound off.
func WithMaxRequestsPerSession(n int) Option {
	return func(s *Server) { s.cfg.MaxRequestsPerSession = n }
}

// WithConfig sets every transport setting at once; options after it can
// still change single fields.
func WithConfig(cfg streamable.Config) Option {
	return func(s *Server) { s.cfg = cfg }
}

// Server is a lifeline transport together with the HTTP server that Start
// runs it on. It is an http.Handler for the MCP endpoint.
type Server struct {
	cfg             streamable.Config
	endpointPath    string
	tlsCert, tlsKey string
	readyPath       string // WithHealthPaths; "" mounts nothing
	livePath        string
	handler         *streamable.Handler

	// WithProtectedResourceMetadata; nil serves none.
	metadata      http.Handler
	metadataPaths []string

	// Health state, read by the health checks without a lock.
	listening atomic.Int32 // Start and Serve calls holding a listener
	draining  atomic.Bool  // Drain or Shutdown was called
	stopped   atomic.Bool  // Shutdown returned

	storeCheck storeCheck // the readiness check's question to the store

	mu         sync.Mutex
	httpServer *http.Server
	closed     bool // Shutdown was called: Start and Serve refuse
}

// New returns a Server for mcpServer. Its transport is live at once, as an
// http.Handler or through Start.
func New(mcpServer *mcpserver.MCPServer, opts ...Option) *Server {
	s := &Server{endpointPath: DefaultEndpointPath}
	for _, o := range opts {
		o(s)
	}
	s.handler = streamable.New(mcpServer, s.cfg)
	return s
}

// NewStreamableHTTPServer is New, named like mcp-go's constructor so that a
// swap is a one-line change.
func NewStreamableHTTPServer(mcpServer *mcpserver.MCPServer, opts ...Option) *Server {
	return New(mcpServer, opts...)
}

// ServeHTTP serves the MCP endpoint and, with
// WithProtectedResourceMetadata, the metadata at its paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.isMetadataPath(r.URL.Path) {
		s.metadata.ServeHTTP(w, r)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// Handler returns the transport, for its Stats.
func (s *Server) Handler() *streamable.Handler { return s.handler }

func (s *Server) server(addr string) (*http.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, http.ErrServerClosed
	}
	if s.httpServer == nil {
		s.httpServer = &http.Server{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	}
	srv := s.httpServer
	if srv.Handler == nil {
		if err := checkHealthPaths(s.endpointPath, s.readyPath, s.livePath); err != nil {
			return nil, err
		}
		if err := checkMetadataPaths(s.metadataPaths, s.readyPath, s.livePath); err != nil {
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle(s.endpointPath, s)
		for _, p := range s.metadataPaths {
			if p != s.endpointPath {
				mux.Handle(p, s.metadata)
			}
		}
		if s.readyPath != "" {
			mux.Handle(s.readyPath, s.ReadinessHandler())
		}
		if s.livePath != "" {
			mux.Handle(s.livePath, s.LivenessHandler())
		}
		srv.Handler = mux
	}
	switch {
	case srv.Addr == "":
		srv.Addr = addr
	case addr != "" && srv.Addr != addr:
		return nil, fmt.Errorf("lifeline: conflicting listen address: server has %q, Start got %q", srv.Addr, addr)
	}
	return srv, nil
}

// Start listens on addr and serves until Shutdown, when it returns
// http.ErrServerClosed; after Shutdown it returns that at once.
func (s *Server) Start(addr string) error {
	srv, err := s.server(addr)
	if err != nil {
		return err
	}
	useTLS := s.tlsCert != "" || s.tlsKey != ""
	if useTLS && (s.tlsCert == "" || s.tlsKey == "") {
		return errors.New("lifeline: WithTLSCert needs both a certificate and a key file")
	}
	// Listen here rather than in ListenAndServe, so that readiness turns
	// 200 only once the port is bound.
	addr = srv.Addr
	if addr == "" {
		addr = ":http"
		if useTLS {
			addr = ":https"
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.listening.Add(1)
	defer s.listening.Add(-1)
	if useTLS {
		return srv.ServeTLS(l, s.tlsCert, s.tlsKey)
	}
	return srv.Serve(l)
}

// Serve serves on l until Shutdown, when it returns http.ErrServerClosed;
// after Shutdown it returns that at once.
func (s *Server) Serve(l net.Listener) error {
	srv, err := s.server("")
	if err != nil {
		l.Close()
		return err
	}
	s.listening.Add(1)
	defer s.listening.Add(-1)
	return srv.Serve(l)
}

// Shutdown stops the transport (every session terminated, every stream
// closed, blocked writes interrupted, handlers waited for) and then the HTTP
// server, all bounded by ctx. ReadinessHandler answers 503 from the moment
// it is called, LivenessHandler once it has returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	defer s.stopped.Store(true)
	err := s.handler.Shutdown(ctx)
	s.mu.Lock()
	s.closed = true
	srv := s.httpServer
	s.mu.Unlock()
	if srv != nil {
		if herr := srv.Shutdown(ctx); herr != nil && !errors.Is(herr, http.ErrServerClosed) {
			err = errors.Join(err, fmt.Errorf("lifeline: http server shutdown: %w", herr))
		}
	}
	return err
}
