// Command lifeline-demo serves an MCP server on lifeline's transport, with
// the in-memory session store or, with -redis, a store on Redis shared by
// every replica started with the same URL and prefix; with -redis the
// event log is on that Redis too (the store's own, the transport's default),
// so a client resumes a stream (GET with Last-Event-ID) on any replica.
//
//	go run ./cmd/lifeline-demo [-addr 127.0.0.1:8080] [-heartbeat 20s]
//	    [-idle-ttl 30m] [-write-timeout 10s] [-debug] [-everything]
//	    [-redis redis://127.0.0.1:6379/0] [-redis-prefix lifeline-demo:]
//	    [-drain-delay 5s] [-shutdown-timeout 10s] [-metrics]
//	    [-otlp 127.0.0.1:4318] [-tokens FILE [-auth-server URL] [-resource URL]]
//
// Tools: echo {text}; lifeline_notify_session {count, bytes}, whose
// notifications travel on the caller's GET stream; lifeline_progress
// {steps, delay_ms}, whose progress and log notifications travel on the
// call's own response. With -debug, /debug/pprof/ is served on the same
// listener.
//
// Health checks for a load balancer or Kubernetes are served on the same
// listener: /readyz (200 while serving, 503 from the first SIGTERM or
// SIGINT on, and while the session store does not answer) and /livez with
// its alias /healthz (200 until the server has shut down).
//
// With -metrics, the transport's OpenTelemetry metrics (the MCP semantic
// conventions' mcp_server_* and lifeline's own lifeline_*) are served in
// the Prometheus text format at /metrics on the same listener, through
// OpenTelemetry's Prometheus exporter. With -otlp, a span per MCP request
// is exported over OTLP/HTTP to the collector named. On SIGTERM or
// SIGINT the demo drains: readiness turns 503 at once, the demo goes on
// serving for -drain-delay so that the load balancer notices, then shuts
// down within -shutdown-timeout (new requests get 503, streams close,
// running calls finish) and exits 0, or 1 if calls were still running when
// the timeout ended. A second signal ends the process at once.
//
// With -tokens FILE (lines of "TOKEN IDENTITY"; blank lines and lines
// starting with # are skipped), every request to /mcp needs
// "Authorization: Bearer TOKEN" with a token of the file: without one it
// gets 401 and a WWW-Authenticate challenge whose resource_metadata names
// the RFC 9728 protected-resource metadata, served without a token at
// /.well-known/oauth-protected-resource/mcp (and the bare well-known path);
// an unknown token gets 401 error="invalid_token". The metadata's resource
// is -resource (default http://ADDR/mcp, the listening address) and its
// authorization server -auth-server (default https://auth.example.com, a
// placeholder: the demo issues no tokens itself). Tools read the token's
// identity with auth.TokenInfoFromContext; the whoami tool, added with
// -tokens, answers with it. Health checks need no token.
//
//	printf 'tok-alice alice\ntok-bob bob\n' > tokens.txt
//	go run ./cmd/lifeline-demo -tokens tokens.txt
//
// With -everything, the demo serves the MCP conformance suite's
// "everything" server (package internal/everything: its test_* tools,
// test:// resources, prompts and completion) instead of the demo tools, so
// the suite can be run against lifeline:
//
//	go run ./cmd/lifeline-demo -everything -addr 127.0.0.1:18111
//	npx @modelcontextprotocol/conformance@0.2.0-alpha.12 server --url http://127.0.0.1:18111/mcp --suite all
//
// (scripts/conformance.sh runs it at every protocol version)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/internal/everything"
	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Once the first signal starts the drain, a second one gets Go's
	// default handling: the process ends at once.
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "lifeline-demo:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down. ready, when not nil, is called
// with the listening address once the server accepts connections.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) (err error) {
	fs := flag.NewFlagSet("lifeline-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	hb := fs.Duration("heartbeat", heartbeat.DefaultInterval, "ping interval on GET streams (0 disables)")
	idle := fs.Duration("idle-ttl", streamable.DefaultIdleTTL, "idle session lifetime (0 disables expiry)")
	wt := fs.Duration("write-timeout", streamable.DefaultWriteTimeout, "deadline of each stream write")
	debug := fs.Bool("debug", false, "also serve /debug/pprof/ and log at debug level")
	everythingMode := fs.Bool("everything", false, "serve the MCP conformance suite's everything server instead of the demo tools")
	redisURL := fs.String("redis", "", "Redis URL of a session store shared by replicas, e.g. redis://127.0.0.1:6379/0 (empty: in-memory store)")
	redisPrefix := fs.String("redis-prefix", demoRedisPrefix,
		"prefix of the Redis keys, named after the application: replicas sharing sessions use the same one, and nothing else on the Redis may")
	drainDelay := fs.Duration("drain-delay", defaultDrainDelay,
		"on SIGTERM or SIGINT, how long /readyz answers 503 while the demo still serves, before it shuts down")
	shutdownTimeout := fs.Duration("shutdown-timeout", defaultShutdownTimeout,
		"how long shutdown lets running calls finish before it cancels them and exits")
	tokensPath := fs.String("tokens", "", "file of bearer tokens, lines of TOKEN IDENTITY: every request to /mcp then needs one (empty: no authorization)")
	authServer := fs.String("auth-server", defaultAuthServer, "with -tokens, the authorization server the protected-resource metadata names")
	resourceURL := fs.String("resource", "", "with -tokens, the resource the metadata describes (default http://ADDR/mcp)")
	maxSessions := fs.Int("max-sessions", streamable.DefaultMaxSessions, "most live sessions; initialize past it gets 503")
	maxPerCaller := fs.Int("max-sessions-per-caller", streamable.DefaultMaxSessionsPerCaller,
		"most live sessions of one identified caller; its initialize past it gets 429 (-1: no bound; anonymous callers have none)")
	maxRequests := fs.Int("max-requests-per-session", streamable.DefaultMaxRequestsPerSession,
		"most requests one session runs at once; one more gets 429 (-1: no bound)")
	metrics := fs.Bool("metrics", false, "serve the transport's OpenTelemetry metrics in the Prometheus text format at "+metricsPath)
	otlp := fs.String("otlp", "", "export traces over OTLP/HTTP to this collector: host:port or URL (e.g. 127.0.0.1:4318; the path defaults to /v1/traces)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// A bad -tokens file or URL fails here, before anything runs.
	var tokens tokenTable
	if *tokensPath != "" {
		if tokens, err = loadTokens(*tokensPath); err != nil {
			return err
		}
		if err := checkAbsoluteURL("-auth-server", *authServer); err != nil {
			return err
		}
		if *resourceURL != "" {
			if err := checkAbsoluteURL("-resource", *resourceURL); err != nil {
				return err
			}
		}
	}
	if *maxSessions <= 0 || *maxPerCaller == 0 || *maxPerCaller < -1 || *maxRequests == 0 || *maxRequests < -1 {
		return fmt.Errorf("-max-sessions must be positive, -max-sessions-per-caller and -max-requests-per-session positive or -1 (got %d, %d and %d)",
			*maxSessions, *maxPerCaller, *maxRequests)
	}
	if *drainDelay < 0 || *shutdownTimeout <= 0 {
		return fmt.Errorf("-drain-delay must not be negative and -shutdown-timeout must be positive (got %v and %v)",
			*drainDelay, *shutdownTimeout)
	}
	// A bad -redis URL fails here, before anything runs.
	var redisOpts *redis.Options
	if *redisURL != "" {
		if redisOpts, err = parseRedisURL(*redisURL); err != nil {
			return err
		}
		if *redisPrefix == "" {
			return errors.New("-redis-prefix must not be empty: it names the application whose sessions the replicas share")
		}
	}
	tel, err := newTelemetry(*metrics, *otlp)
	if err != nil {
		return err
	}
	defer func() {
		// After Shutdown: the last spans are flushed.
		ctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
		defer cancel()
		if cerr := tel.close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("telemetry: %w", cerr))
		}
	}()
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	// Listen before the transport starts its goroutines, so a bad address
	// leaves nothing running.
	l, lerr := net.Listen("tcp", *addr)
	if lerr != nil {
		return fmt.Errorf("listen: %w", lerr)
	}
	// From here on the store, when there is one, is closed on every path.
	store, storeAttrs, closeStore := openStore(ctx, redisOpts, *redisURL, *redisPrefix, logger)
	defer func() { err = errors.Join(err, closeStore()) }()

	var mcpServer *mcpserver.MCPServer
	if *everythingMode {
		mcpServer = everything.NewServer()
	} else {
		mcpServer = demotools.NewServer("lifeline-demo", "0.1.0")
	}
	if tokens != nil {
		addWhoami(mcpServer)
	}
	mux := http.NewServeMux()
	identity := tel.opts
	if tokens != nil {
		// Each session is bound to the identity of the token that created
		// it: another token's requests on it get 403.
		identity = append(identity, server.WithCallerIdentity(callerOf))
	}
	srv := server.New(mcpServer, append(identity,
		server.WithHeartbeatInterval(*hb),
		server.WithSessionIdleTTL(*idle),
		server.WithWriteTimeout(*wt),
		server.WithStreamableHTTPLogger(logger),
		server.WithSessionStore(store),
		server.WithMaxSessions(*maxSessions),
		server.WithMaxSessionsPerCaller(*maxPerCaller),
		server.WithMaxRequestsPerSession(*maxRequests),
		server.WithStreamableHTTPServer(&http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}),
	)...)
	var endpoint http.Handler = srv
	authAttrs := []any{"auth", "none"}
	if tokens != nil {
		resource := *resourceURL
		if resource == "" {
			resource = "http://" + l.Addr().String() + server.DefaultEndpointPath
		}
		var metadataURL string
		endpoint, metadataURL = protect(mux, srv, tokens, resource, *authServer, logger)
		authAttrs = []any{"auth", "bearer", "tokens", len(tokens), "resource_metadata", metadataURL, "auth_server", *authServer}
	}
	mux.Handle(server.DefaultEndpointPath, endpoint)
	mux.Handle(readyPath, srv.ReadinessHandler())
	mux.Handle(livePath, srv.LivenessHandler())
	mux.Handle(healthzPath, srv.LivenessHandler())
	if tel.metrics != nil {
		mux.Handle(metricsPath, tel.metrics)
	}
	if *debug {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}

	logger.Info("lifeline-demo serving MCP", append([]any{"url", "http://" + l.Addr().String() + server.DefaultEndpointPath,
		"readyz", readyPath, "livez", livePath, "metrics", tel.metrics != nil, "otlp", *otlp, "drain_delay", *drainDelay, "shutdown_timeout", *shutdownTimeout,
		"heartbeat", *hb, "idle_ttl", *idle, "write_timeout", *wt,
		"max_sessions", *maxSessions, "max_sessions_per_caller", *maxPerCaller, "max_requests_per_session", *maxRequests, "debug", *debug, "everything", *everythingMode},
		append(storeAttrs, authAttrs...)...)...)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if ready != nil {
		ready(l.Addr().String())
	}
	var serveErr error
	select {
	case serveErr = <-served:
	case <-ctx.Done():
		serveErr = drain(srv, served, *drainDelay, logger)
	}
	logger.Info("lifeline-demo: shutting down: new requests get 503, streams close, running calls may finish",
		"timeout", *shutdownTimeout)
	began := time.Now()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if err != nil {
		logger.Error("lifeline-demo: shutdown did not finish cleanly", "took", time.Since(began), "err", err)
	} else {
		logger.Info("lifeline-demo: shut down", "took", time.Since(began))
	}
	if serveErr == nil {
		serveErr = <-served
	}
	if !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve: %w", serveErr))
	}
	return err
}

// Health check paths and the drain defaults.
const (
	readyPath              = "/readyz"
	livePath               = "/livez"
	healthzPath            = "/healthz" // liveness, under the name many probes expect
	defaultDrainDelay      = 5 * time.Second
	defaultShutdownTimeout = 10 * time.Second
)

// drain turns readiness 503 and keeps serving for delay, so that a load
// balancer stops sending here before Shutdown refuses requests. It returns
// early, with Serve's error, if Serve ends on its own meanwhile; nil
// otherwise.
func drain(srv *server.Server, served <-chan error, delay time.Duration, logger *slog.Logger) error {
	logger.Info("lifeline-demo: stopping: draining, "+readyPath+" now answers 503", "drain_delay", delay)
	drained := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(drained)
		_ = srv.Drain(ctx, delay)
	}()
	select {
	case <-drained:
		logger.Info("lifeline-demo: drain delay over")
		return nil
	case err := <-served:
		cancel()
		<-drained
		return err
	}
}

// demoRedisPrefix is -redis-prefix's default: the demo's server name, so
// that its sessions never mix with another application's on a shared Redis.
const demoRedisPrefix = "lifeline-demo:"

// redisPingTimeout bounds the startup check that Redis answers.
const redisPingTimeout = redisstore.DefaultOpTimeout

// parseRedisURL parses a -redis URL into client options with
// ContextTimeoutEnabled, so that the store's OpTimeout bounds a hung server.
// Its errors do not repeat the URL, which may hold a password.
func parseRedisURL(rawURL string) (*redis.Options, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("-redis: not a Redis URL (want redis://host:port/db, rediss:// or unix://): %w", err)
	}
	opts.ContextTimeoutEnabled = true
	return opts, nil
}

// openStore returns the session store the flags ask for, the attributes
// that describe it in the startup log, and a function that closes the store
// and then its client. With opts nil it is the transport's default
// in-memory store (a nil Store) and closing does nothing. Otherwise it is a
// redisstore.Store; Redis is pinged, bounded by ctx and redisPingTimeout,
// and an unreachable Redis is logged as a warning, not an error: the store
// works once Redis answers.
func openStore(ctx context.Context, opts *redis.Options, rawURL, prefix string, logger *slog.Logger) (sessionstore.Store, []any, func() error) {
	if opts == nil {
		return nil, []any{"store", "memory"}, func() error { return nil }
	}
	shown := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		shown = u.Redacted()
	}
	client := redis.NewClient(opts)
	store := redisstore.New(client, redisstore.Options{Prefix: prefix})
	closeStore := func() error {
		return errors.Join(store.Close(), client.Close())
	}

	ctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		logger.Warn("lifeline-demo: Redis is unreachable; serving anyway, requests that need it get 503 until it answers",
			"redis", shown, "err", err)
	}
	return store, []any{"store", "redis", "redis", shown, "redis_prefix", prefix}, closeStore
}
